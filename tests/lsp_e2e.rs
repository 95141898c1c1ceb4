//! End-to-end tests of `rawko serve` (being written).

mod support;
