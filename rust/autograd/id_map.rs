//! Hash maps keyed by the address of a tape node or a tensor (`Arc::as_ptr`), as the
//! reverse pass keeps them: a multiply instead of SipHash, which such keys do not need
//! (they are not chosen by an attacker), and the same order in every run.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A map from node or tensor ids (or tuples of them) to `V`.
pub type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// FxHash's step, with a last rotation: the bucket comes from the low bits, where a
/// product alone would only depend on the key's low bits (always zero in an aligned address).
#[derive(Default)]
pub struct IdHasher(u64);

const SEED: u64 = 0x517c_c1b7_2722_0a95;

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = (self.0.rotate_left(5) ^ value).wrapping_mul(SEED);
    }

    fn write_usize(&mut self, value: usize) {
        self.write_u64(value as u64);
    }

    fn finish(&self) -> u64 {
        self.0.rotate_left(26)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn aligned_addresses_spread_over_the_low_bits() {
        let build = BuildHasherDefault::<IdHasher>::default();
        // 1024 addresses 64 bytes apart: their low 6 bits are all zero.
        let buckets: std::collections::HashSet<u64> =
            (0..1024usize).map(|i| build.hash_one(0x7f00_0000_0000 + 64 * i) & 1023).collect();
        assert!(buckets.len() > 600, "only {} of 1024 buckets used", buckets.len());
    }

    #[test]
    fn maps_of_ids_and_pairs_of_ids_find_what_they_hold() {
        let mut map: IdMap<(usize, usize), usize> = IdMap::default();
        for i in 0..500 {
            map.insert((0x1000 + 16 * i, i % 3), i);
        }
        assert!((0..500).all(|i| map[&(0x1000 + 16 * i, i % 3)] == i));
        assert_eq!(map.get(&(0x1000, 1)), None);
    }
}
