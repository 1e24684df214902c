"""Drive a ledgerd devnet from a Python test suite.

A pytest fixture starts `ledgerd --dev --ephemeral --bind 127.0.0.1:0` (a
fresh chain on a temporary data dir, removed when the node stops), reads the
port from its first stdout line, and stops it after the test.
Run it with pytest (`pytest test_devnet.py`) or without (`python3
test_devnet.py`: the same tests, run in order by the bottom of this file).
The ledgerd binary is $LEDGERD, else `ledgerd` on the PATH.
"""

import json
import os
import subprocess
import urllib.request

try:
    import pytest
except ImportError:  # plain `python3 test_devnet.py` needs no pytest
    pytest = None


class Ledgerd:
    """A running ledgerd devnet and a JSON-RPC client for it."""

    def __init__(self, url):
        self.url = url

    def call(self, method, *params):
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)})
        request = urllib.request.Request(self.url, body.encode(), {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as answer:
            reply = json.load(answer)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply["result"]

    def status(self, height):
        return self.call("ledger_getSoftConfirmationStatus", height)


def start_ledgerd():
    """Starts a devnet node on a free port; yields it, then stops it."""
    node = subprocess.Popen(
        [os.environ.get("LEDGERD", "ledgerd"), "--dev", "--ephemeral", "--dev-block-ms", "0",
         "--bind", "127.0.0.1:0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    try:
        line = node.stdout.readline()  # "listening on http://127.0.0.1:PORT"
        assert line.startswith("listening on "), f"ledgerd did not start: {line!r}"
        yield Ledgerd(line.split()[-1])
    finally:
        node.terminate()  # SIGTERM: stops cleanly within a second, and removes its data dir
        node.wait(timeout=10)


if pytest is not None:
    ledgerd = pytest.fixture(name="ledgerd")(start_ledgerd)


def test_mine_commit_prove(ledgerd):
    ledgerd.call("dev_setAutoCommit", 0)  # only explicit commits and proofs
    ledgerd.call("dev_setAutoProve", 0)
    assert ledgerd.call("dev_mine", 5) == 5
    assert ledgerd.status(3) == "Trusted"
    commitment = ledgerd.call("dev_commit")
    assert (commitment["l2StartBlockNumber"], commitment["l2EndBlockNumber"]) == (1, 5)
    assert ledgerd.status(3) == "Finalized"
    proof = ledgerd.call("dev_prove")
    assert proof["proof"]["proofOutput"]["lastL2Height"] == 5
    assert ledgerd.status(3) == "Proven"


def test_a_sent_transaction_lands_in_the_next_block(ledgerd):
    height = ledgerd.call("dev_sendTransaction", "0xdeadbeef")
    assert ledgerd.call("dev_mine") == height
    block = ledgerd.call("ledger_getSoftConfirmationByNumber", height)
    assert "deadbeef" in block["txs"]


def test_bad_params_are_refused(ledgerd):
    try:
        ledgerd.call("dev_mine", -1)
    except RuntimeError as e:
        assert "-32602" in str(e)
    else:
        raise AssertionError("dev_mine -1 was accepted")


if __name__ == "__main__":
    tests = [test_mine_commit_prove, test_a_sent_transaction_lands_in_the_next_block,
             test_bad_params_are_refused]
    for test in tests:
        node = start_ledgerd()
        try:
            test(next(node))
        finally:
            node.close()  # runs the fixture's cleanup: the node stops
        print(f"{test.__name__} passed")
    print(f"{len(tests)} passed")
