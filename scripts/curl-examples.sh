#!/usr/bin/env bash
# Prints every README curl example with the answer it gives, against a node
# at $URL (default http://127.0.0.1:12346). Start one first, e.g.
#   cargo run --release -- --dev --dev-prefill 200 --dev-block-ms 0 --data-dir /tmp/ex
set -euo pipefail
URL=${URL:-http://127.0.0.1:12346}
call() {
  local body=$1
  echo "curl -s $URL -d '$body'"
  curl -s "$URL" -d "$body" | head -c "${MAX_CHARS:-1200}"
  echo; echo
}
call '{"jsonrpc":"2.0","id":1,"method":"svc_syncStatus","params":[]}'
call '{"jsonrpc":"2.0","id":1,"method":"citrea_syncStatus","params":[]}'
call '{"jsonrpc":"2.0","id":1,"method":"ledger_getSoftConfirmationByNumber","params":[1]}'
HASH=$(curl -s "$URL" -d '{"jsonrpc":"2.0","id":1,"method":"ledger_getSoftConfirmationByNumber","params":[1]}' | sed -E 's/.*"hash":"([0-9a-f]{64})".*/\1/')
call "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ledger_getSoftConfirmationByHash\",\"params\":[\"0x$HASH\"]}"
call '{"jsonrpc":"2.0","id":1,"method":"ledger_getSoftConfirmationRange","params":[1,2]}'
call '{"jsonrpc":"2.0","id":1,"method":"ledger_getSoftConfirmationStatus","params":[1]}'
call '{"jsonrpc":"2.0","id":1,"method":"ledger_getSoftConfirmationStatus","params":["200"]}'
call '{"jsonrpc":"2.0","id":1,"method":"ledger_getL2GenesisStateRoot","params":[]}'
call '{"jsonrpc":"2.0","id":1,"method":"ledger_getSequencerCommitmentsOnSlotByNumber","params":[1008]}'
SLOTHASH=$(curl -s "$URL" -d '{"jsonrpc":"2.0","id":1,"method":"ledger_getSoftConfirmationByNumber","params":[17]}' | sed -E 's/.*"daSlotHash":"([0-9a-f]{64})".*/\1/')
call "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ledger_getSequencerCommitmentsOnSlotByHash\",\"params\":[\"$SLOTHASH\"]}"
call '{"jsonrpc":"2.0","id":1,"method":"ledger_getHeadSoftConfirmation","params":[]}'
call '{"jsonrpc":"2.0","id":1,"method":"ledger_getHeadSoftConfirmationHeight","params":[]}'
call '{"jsonrpc":"2.0","id":1,"method":"ledger_getVerifiedBatchProofsBySlotHeight","params":[1039]}'
call '{"jsonrpc":"2.0","id":1,"method":"ledger_getLastVerifiedBatchProof","params":[]}'
call '{"jsonrpc":"2.0","id":1,"method":"ledger_getLastScannedL1Height","params":[]}'
call '[{"jsonrpc":"2.0","id":1,"method":"ledger_getHeadSoftConfirmationHeight"},{"jsonrpc":"2.0","id":"b","method":"ledger_getSoftConfirmationStatus","params":{"number":"0x10"}}]'
call '{"jsonrpc":"2.0","id":1,"method":"ledger_getSoftConfirmationRange","params":[5,1]}'
call '{"jsonrpc":"2.0","id":1,"method":"ledger_getSoftConfirmationStatus","params":[999999]}'
call '{"jsonrpc":"2.0","id":1,"method":"ledger_getSoftConfirmationByNumber","params":["abc"]}'
call '{"jsonrpc":"2.0","id":1,"method":"ledger_nope","params":[]}'
