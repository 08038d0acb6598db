//! See `tests/safety.rs`.
#[allow(unused_imports)]
use super::*;
