//! The Q/K row permutation llama.cpp's converter applies to llama-family attention
//! projections, so that rotary embedding can pair neighbouring rows (its "normal" rope)
//! instead of the two halves of each head (Hugging Face's layout).
//!
//! The converter (`LlamaModel.permute`) reshapes the `[n_head · head_dim, cols]` weight
//! to `[n_head, 2, head_dim / 2, cols]`, swaps axes 1 and 2 and flattens back. Stated per
//! row: within head `h`, target row `h·head_dim + 2i + j` is source row
//! `h·head_dim + j·head_dim/2 + i` (`i < head_dim / 2`, `j ∈ {0, 1}`). Rows never leave their
//! head, so a reader can compare one head's block of rows at a time.

/// The permutation of one projection: `heads` heads of `head_dim` rows each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QkPermutation {
    pub heads: u64,
    pub head_dim: u64,
}

impl QkPermutation {
    /// The permutation of a projection with `rows` rows split into `heads` heads, or
    /// `None` when the rows are not an even number per head.
    pub fn new(rows: u64, heads: u64) -> Option<QkPermutation> {
        if heads == 0 || !rows.is_multiple_of(heads) {
            return None;
        }
        let head_dim = rows / heads;
        if head_dim == 0 || !head_dim.is_multiple_of(2) {
            return None;
        }
        Some(QkPermutation { heads, head_dim })
    }

    pub fn rows(&self) -> u64 {
        self.heads.saturating_mul(self.head_dim)
    }

    /// The source row (Hugging Face order) the target row `t` (GGUF order) holds.
    pub fn source_row(&self, t: u64) -> u64 {
        let hd = self.head_dim;
        let head = t / hd;
        let r = t % hd;
        head * hd + (r % 2) * (hd / 2) + r / 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// numpy's `w.reshape(n, 2, hd/2, c).swapaxes(1, 2).reshape(w.shape)` done the long
    /// way: the output's multi-index (h, i, j, col) in shape (n, hd/2, 2, c) reads the
    /// input's (h, j, i, col) in shape (n, 2, hd/2, c), each flattened with its strides.
    fn reference(n: u64, hd: u64, c: u64) -> Vec<u64> {
        let half = hd / 2;
        let mut out = Vec::new();
        for h in 0..n {
            for i in 0..half {
                for j in 0..2 {
                    for col in 0..c {
                        let src = ((h * 2 + j) * half + i) * c + col;
                        out.push(src);
                    }
                }
            }
        }
        out
    }

    #[test]
    fn matches_the_reshape_swapaxes_reference() {
        for (n, hd, c) in [(1, 2, 1), (2, 4, 3), (3, 8, 5), (24, 128, 2), (8, 16, 1)] {
            let p = QkPermutation::new(n * hd, n).unwrap();
            let reference = reference(n, hd, c);
            let ours: Vec<u64> = (0..n * hd)
                .flat_map(|t| (0..c).map(move |col| p.source_row(t) * c + col))
                .collect();
            assert_eq!(ours, reference, "n_head {n}, head_dim {hd}, cols {c}");
        }
        // The well-known small case: two heads of four rows.
        let p = QkPermutation::new(8, 2).unwrap();
        let rows: Vec<u64> = (0..8).map(|t| p.source_row(t)).collect();
        assert_eq!(rows, [0, 2, 1, 3, 4, 6, 5, 7]);
    }

    #[test]
    fn rejects_odd_or_uneven_heads() {
        assert_eq!(QkPermutation::new(12, 5), None);
        assert_eq!(QkPermutation::new(6, 2), None, "head_dim 3 is odd");
        assert_eq!(QkPermutation::new(6, 0), None);
    }
}
