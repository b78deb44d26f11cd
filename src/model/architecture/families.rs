//! The tensor inventory of the MoE, MLA and hybrid families (placeholder, filled below).

use super::{Architecture, Expected};

pub fn expected_tensors(_arch: &Architecture, _prefix: &str) -> Option<Vec<Expected>> {
    None
}
