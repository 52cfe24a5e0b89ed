//! RFC 6962 Merkle tree hashing with inclusion and consistency proofs.
//!
//! Generation follows RFC 6962 §2.1 (PATH and PROOF/SUBPROOF over the split
//! at the largest power of two smaller than n); verification follows the
//! algorithms of RFC 9162 §2.1.3.2 and §2.1.4.2, which need only the sizes,
//! the proof and the roots.
//!
//! A proof binds an index and sizes only together with the roots for those
//! sizes: take (size, root) pairs from signed checkpoints, never from the
//! party presenting the proof.

use sha2::{Digest as _, Sha256};

/// A SHA-256 tree hash.
pub type Hash = [u8; 32];

/// A proof was refused, or asked for with impossible sizes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MerkleError {
    /// An index or size outside the tree.
    #[error("{what} {value} is out of range for a tree of {size} leaves")]
    OutOfRange {
        /// Which number.
        what: &'static str,
        /// Its value.
        value: u64,
        /// The tree size.
        size: u64,
    },
    /// The proof has the wrong number of hashes for these sizes.
    #[error("proof has the wrong length for these tree sizes")]
    ProofLength,
    /// The proof does not lead to the given root(s).
    #[error("proof does not match the {0} root")]
    RootMismatch(&'static str),
}

/// The hash of a tree with no leaves: SHA-256 of the empty string.
pub fn empty_root() -> Hash {
    Sha256::digest([]).into()
}

/// The leaf hash of `data`: SHA-256(0x00 ‖ data).
pub fn leaf_hash(data: &[u8]) -> Hash {
    let mut h = Sha256::new();
    h.update([0u8]);
    h.update(data);
    h.finalize().into()
}

/// An interior node: SHA-256(0x01 ‖ left ‖ right).
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update([1u8]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// The largest power of two strictly smaller than `n` (n ≥ 2).
fn split(n: usize) -> usize {
    debug_assert!(n >= 2);
    1 << (usize::BITS - 1 - (n - 1).leading_zeros())
}

/// The root hash (MTH) of a tree whose leaf hashes are `leaves`.
pub fn root(leaves: &[Hash]) -> Hash {
    match leaves.len() {
        0 => empty_root(),
        1 => leaves[0],
        n => {
            let k = split(n);
            node_hash(&root(&leaves[..k]), &root(&leaves[k..]))
        }
    }
}

/// The audit path for leaf `index` (RFC 6962 PATH), leaf-side first.
pub fn inclusion_proof(leaves: &[Hash], index: u64) -> Result<Vec<Hash>, MerkleError> {
    let size = leaves.len() as u64;
    if index >= size {
        return Err(MerkleError::OutOfRange {
            what: "leaf index",
            value: index,
            size,
        });
    }
    let mut proof = Vec::new();
    path(index as usize, leaves, &mut proof);
    Ok(proof)
}

fn path(m: usize, leaves: &[Hash], out: &mut Vec<Hash>) {
    let n = leaves.len();
    if n <= 1 {
        return;
    }
    let k = split(n);
    if m < k {
        path(m, &leaves[..k], out);
        out.push(root(&leaves[k..]));
    } else {
        path(m - k, &leaves[k..], out);
        out.push(root(&leaves[..k]));
    }
}

/// The consistency proof from the tree of the first `old_size` leaves to the
/// whole of `leaves` (RFC 6962 PROOF). Empty when `old_size` is 0 or equal
/// to the size.
pub fn consistency_proof(leaves: &[Hash], old_size: u64) -> Result<Vec<Hash>, MerkleError> {
    let size = leaves.len() as u64;
    if old_size > size {
        return Err(MerkleError::OutOfRange {
            what: "old size",
            value: old_size,
            size,
        });
    }
    let mut proof = Vec::new();
    if old_size > 0 {
        subproof(old_size as usize, leaves, true, &mut proof);
    }
    Ok(proof)
}

fn subproof(m: usize, leaves: &[Hash], whole: bool, out: &mut Vec<Hash>) {
    let n = leaves.len();
    if m == n {
        if !whole {
            out.push(root(leaves));
        }
        return;
    }
    let k = split(n);
    if m <= k {
        subproof(m, &leaves[..k], whole, out);
        out.push(root(&leaves[k..]));
    } else {
        subproof(m - k, &leaves[k..], false, out);
        out.push(root(&leaves[..k]));
    }
}

/// Checks that `leaf` is leaf `index` of the tree of `size` leaves with
/// root `root` (RFC 9162 §2.1.3.2).
pub fn verify_inclusion(
    leaf: &Hash,
    index: u64,
    size: u64,
    proof: &[Hash],
    root: &Hash,
) -> Result<(), MerkleError> {
    if index >= size {
        return Err(MerkleError::OutOfRange {
            what: "leaf index",
            value: index,
            size,
        });
    }
    let (mut fn_, mut sn) = (index, size - 1);
    let mut r = *leaf;
    for p in proof {
        if sn == 0 {
            return Err(MerkleError::ProofLength);
        }
        if fn_ & 1 == 1 || fn_ == sn {
            r = node_hash(p, &r);
            while fn_ & 1 == 0 && fn_ != 0 {
                fn_ >>= 1;
                sn >>= 1;
            }
        } else {
            r = node_hash(&r, p);
        }
        fn_ >>= 1;
        sn >>= 1;
    }
    if sn != 0 {
        return Err(MerkleError::ProofLength);
    }
    if &r != root {
        return Err(MerkleError::RootMismatch("tree"));
    }
    Ok(())
}

/// Checks that the tree of `old_size` leaves with root `old_root` is a
/// prefix of the tree of `new_size` leaves with root `new_root`
/// (RFC 9162 §2.1.4.2). Sizes 0 → n and n → n need an empty proof.
pub fn verify_consistency(
    old_size: u64,
    new_size: u64,
    old_root: &Hash,
    new_root: &Hash,
    proof: &[Hash],
) -> Result<(), MerkleError> {
    if old_size > new_size {
        return Err(MerkleError::OutOfRange {
            what: "old size",
            value: old_size,
            size: new_size,
        });
    }
    if old_size == 0 || old_size == new_size {
        if !proof.is_empty() {
            return Err(MerkleError::ProofLength);
        }
        if old_size == 0 {
            // Every tree extends the empty tree; its root must still be the empty root.
            return if *old_root == empty_root() {
                Ok(())
            } else {
                Err(MerkleError::RootMismatch("old"))
            };
        }
        return if old_root == new_root {
            Ok(())
        } else {
            Err(MerkleError::RootMismatch("old"))
        };
    }
    // When the old tree is a complete subtree, its root is the path's start.
    let mut path: Vec<Hash> = Vec::with_capacity(proof.len() + 1);
    if old_size.is_power_of_two() {
        path.push(*old_root);
    }
    path.extend_from_slice(proof);
    let Some((first, rest)) = path.split_first() else {
        return Err(MerkleError::ProofLength);
    };
    let (mut fn_, mut sn) = (old_size - 1, new_size - 1);
    while fn_ & 1 == 1 {
        fn_ >>= 1;
        sn >>= 1;
    }
    let (mut fr, mut sr) = (*first, *first);
    for c in rest {
        if sn == 0 {
            return Err(MerkleError::ProofLength);
        }
        if fn_ & 1 == 1 || fn_ == sn {
            fr = node_hash(c, &fr);
            sr = node_hash(c, &sr);
            while fn_ & 1 == 0 && fn_ != 0 {
                fn_ >>= 1;
                sn >>= 1;
            }
        } else {
            sr = node_hash(&sr, c);
        }
        fn_ >>= 1;
        sn >>= 1;
    }
    if sn != 0 {
        return Err(MerkleError::ProofLength);
    }
    if &fr != old_root {
        return Err(MerkleError::RootMismatch("old"));
    }
    if &sr != new_root {
        return Err(MerkleError::RootMismatch("new"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6962 MTH written the obvious way, over raw leaf data.
    fn reference_root(data: &[Vec<u8>]) -> Hash {
        let n = data.len();
        if n == 0 {
            return Sha256::digest([]).into();
        }
        if n == 1 {
            let mut v = vec![0u8];
            v.extend_from_slice(&data[0]);
            return Sha256::digest(&v).into();
        }
        let mut k = 1;
        while k * 2 < n {
            k *= 2;
        }
        let mut v = vec![1u8];
        v.extend_from_slice(&reference_root(&data[..k]));
        v.extend_from_slice(&reference_root(&data[k..]));
        Sha256::digest(&v).into()
    }

    fn data(n: usize) -> Vec<Vec<u8>> {
        (0..n).map(|i| format!("leaf {i}").into_bytes()).collect()
    }

    fn leaves(d: &[Vec<u8>]) -> Vec<Hash> {
        d.iter().map(|x| leaf_hash(x)).collect()
    }

    #[test]
    fn split_is_largest_power_of_two_below() {
        for (n, k) in [
            (2, 1),
            (3, 2),
            (4, 2),
            (5, 4),
            (8, 4),
            (9, 8),
            (64, 32),
            (65, 64),
        ] {
            assert_eq!(split(n), k, "n={n}");
        }
    }

    #[test]
    fn roots_match_reference_and_known_values() {
        assert_eq!(
            hex::encode(root(&[])),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        // RFC 6962 leaf hash of the empty string.
        assert_eq!(
            hex::encode(leaf_hash(b"")),
            "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"
        );
        for n in 0..=64 {
            let d = data(n);
            assert_eq!(root(&leaves(&d)), reference_root(&d), "n={n}");
        }
    }

    #[test]
    fn inclusion_every_index_up_to_64() {
        let all = data(65);
        let roots: Vec<Hash> = (0..=65).map(|n| reference_root(&all[..n])).collect();
        for n in 1..=64u64 {
            let l = leaves(&all[..n as usize]);
            let r = roots[n as usize];
            for i in 0..n {
                let proof = inclusion_proof(&l, i).unwrap();
                let leaf = l[i as usize];
                verify_inclusion(&leaf, i, n, &proof, &r).unwrap();
                // Every bit flip in every proof hash is rejected.
                for j in 0..proof.len() {
                    for bit in [0, 7, 255] {
                        let mut bad = proof.clone();
                        bad[j][bit / 8] ^= 1 << (bit % 8);
                        assert!(
                            verify_inclusion(&leaf, i, n, &bad, &r).is_err(),
                            "n={n} i={i} j={j}"
                        );
                    }
                }
                // Wrong length.
                let mut longer = proof.clone();
                longer.push([0; 32]);
                assert!(verify_inclusion(&leaf, i, n, &longer, &r).is_err());
                if !proof.is_empty() {
                    assert!(verify_inclusion(&leaf, i, n, &proof[..proof.len() - 1], &r).is_err());
                }
                // Wrong index or wrong size, each with that tree's real root.
                for (ii, nn) in [(i + 1, n), (i.wrapping_sub(1), n), (i, n + 1), (i, n - 1)] {
                    if ii >= nn || nn == 0 {
                        continue;
                    }
                    assert!(
                        verify_inclusion(&leaf, ii, nn, &proof, &roots[nn as usize]).is_err(),
                        "n={n} i={i} checked as {ii},{nn}"
                    );
                }
                assert!(verify_inclusion(&leaf_hash(b"other"), i, n, &proof, &r).is_err());
            }
        }
        assert!(matches!(
            inclusion_proof(&leaves(&data(3)), 3),
            Err(MerkleError::OutOfRange { .. })
        ));
    }

    #[test]
    fn consistency_every_pair_up_to_64() {
        let all = data(64);
        for n in 1..=64u64 {
            let l = leaves(&all[..n as usize]);
            let new_root = reference_root(&all[..n as usize]);
            for m in 0..=n {
                let old_root = reference_root(&all[..m as usize]);
                let proof = consistency_proof(&l, m).unwrap();
                verify_consistency(m, n, &old_root, &new_root, &proof)
                    .unwrap_or_else(|e| panic!("m={m} n={n}: {e}"));
                for j in 0..proof.len() {
                    for bit in [0, 100, 255] {
                        let mut bad = proof.clone();
                        bad[j][bit / 8] ^= 1 << (bit % 8);
                        assert!(
                            verify_consistency(m, n, &old_root, &new_root, &bad).is_err(),
                            "m={m} n={n} j={j} bit={bit}"
                        );
                    }
                }
                let mut longer = proof.clone();
                longer.push(new_root);
                assert!(
                    verify_consistency(m, n, &old_root, &new_root, &longer).is_err(),
                    "m={m} n={n}"
                );
                if !proof.is_empty() {
                    let shorter = &proof[..proof.len() - 1];
                    assert!(
                        verify_consistency(m, n, &old_root, &new_root, shorter).is_err(),
                        "m={m} n={n}"
                    );
                }
                // Wrong sizes, each with those trees' real roots; skipped only
                // where the right proof for those sizes is this very proof.
                for (mm, nn) in [(m + 1, n), (m.wrapping_sub(1), n), (m, n + 1), (m, n - 1)] {
                    if mm > nn || mm == u64::MAX || nn > 64 {
                        continue;
                    }
                    let (old, new) = (
                        reference_root(&all[..mm as usize]),
                        reference_root(&all[..nn as usize]),
                    );
                    if consistency_proof(&leaves(&all[..nn as usize]), mm).unwrap() == proof {
                        continue;
                    }
                    assert!(
                        verify_consistency(mm, nn, &old, &new, &proof).is_err(),
                        "m={m} n={n} checked as {mm},{nn}"
                    );
                }
                // A different old tree (edited leaf) is rejected.
                if m > 0 {
                    let mut edited = all[..m as usize].to_vec();
                    edited[0].push(b'!');
                    let wrong_old = reference_root(&edited);
                    assert!(verify_consistency(m, n, &wrong_old, &new_root, &proof).is_err());
                }
                // A truncated tree cannot prove it extends a larger one.
                if m < n {
                    assert!(verify_consistency(n, m, &new_root, &old_root, &proof).is_err());
                }
            }
        }
    }

    #[test]
    #[allow(
        clippy::many_single_char_names,
        reason = "names follow the RFC's example tree"
    )]
    fn rfc_shapes_of_consistency_proofs() {
        // RFC 6962 §2.1.3 example tree of 7 leaves d0..d6.
        let d = data(7);
        let l = leaves(&d);
        let (a, b, c, dd, e, f, g) = (l[0], l[1], l[2], l[3], l[4], l[5], l[6]);
        let (h, i, j) = (node_hash(&a, &b), node_hash(&c, &dd), node_hash(&e, &f));
        let k = node_hash(&h, &i);
        assert_eq!(
            consistency_proof(&l, 3).unwrap(),
            vec![c, dd, h, node_hash(&j, &g)]
        );
        assert_eq!(consistency_proof(&l, 4).unwrap(), vec![node_hash(&j, &g)]);
        assert_eq!(consistency_proof(&l, 6).unwrap(), vec![j, g, k]);
        assert_eq!(
            inclusion_proof(&l, 0).unwrap(),
            vec![b, i, node_hash(&j, &g)]
        );
        assert_eq!(
            inclusion_proof(&l, 3).unwrap(),
            vec![c, h, node_hash(&j, &g)]
        );
        assert_eq!(inclusion_proof(&l, 4).unwrap(), vec![f, g, k]);
        assert_eq!(inclusion_proof(&l, 6).unwrap(), vec![j, k]);
    }
}
