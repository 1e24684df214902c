//! [`Latest`]: a value set whole by one thread and read by others.

use std::sync::{Mutex, PoisonError};

/// The latest of something (why a source fails, the best header), set
/// whole by one thread and read by others.
#[derive(Debug)]
pub struct Latest<T>(Mutex<Option<T>>);

impl<T> Default for Latest<T> {
    fn default() -> Self {
        Latest(Mutex::new(None))
    }
}

impl<T: Clone> Latest<T> {
    pub fn set(&self, value: Option<T>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = value;
    }

    pub fn get(&self) -> Option<T> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}
