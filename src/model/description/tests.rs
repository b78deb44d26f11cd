//! Tests of the description (the fixture pairs are in tests/families.rs).
