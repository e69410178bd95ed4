//! Generators: seedable sources of random numbers that threads may share.
//!
//! A generator's whole state is a seed and an offset. A draw cuts its output into
//! blocks of `BLOCK` elements and fills block `k` from ChaCha12 stream number
//! `offset + k` of the key the seed gives; then the offset moves past the streams
//! the draw used. So:
//! - a seed gives the same numbers whatever the number of threads filling the blocks;
//! - a draw that fails (out of memory, Ctrl-C) leaves the generator where it was;
//! - the state is 16 bytes, which `get_state`/`set_state` save and restore.
//!
//! Draws from one generator take its lock for their duration, so concurrent draws
//! each get their own streams, in some order.

use crate::error::{Error, Result};
use crate::interrupt::Poller;
use crate::kernels::PARALLEL_MIN_ELEMENTS;
use parking_lot::Mutex;
use rand::SeedableRng;
use rand_chacha::ChaCha12Rng;
use rayon::prelude::*;
use std::sync::{Arc, OnceLock};

/// The seed of a new `Generator()`, as torch's (`default_rng_seed_val`).
pub const DEFAULT_SEED: u64 = 67_280_421_310_721;

/// Elements drawn from one stream.
pub const BLOCK: usize = 1 << 14;

/// Where a generator is: its seed and the first stream its next draw uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct State {
    pub seed: u64,
    pub offset: u64,
}

impl State {
    pub const BYTES: usize = 16;

    /// The seed then the offset, little-endian.
    pub fn to_bytes(self) -> [u8; Self::BYTES] {
        let mut out = [0u8; Self::BYTES];
        out[..8].copy_from_slice(&self.seed.to_le_bytes());
        out[8..].copy_from_slice(&self.offset.to_le_bytes());
        out
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<State> {
        let word = |range: std::ops::Range<usize>| -> Option<u64> {
            Some(u64::from_le_bytes(bytes.get(range)?.try_into().ok()?))
        };
        match (bytes.len(), word(0..8), word(8..16)) {
            (Self::BYTES, Some(seed), Some(offset)) => Ok(State { seed, offset }),
            _ => Err(Error::InvalidArgument(format!(
                "set_state: RNG state is wrong size: expected {} bytes (a uint8 tensor from get_state()), got {}",
                Self::BYTES,
                bytes.len()
            ))),
        }
    }
}

pub struct Generator {
    state: Mutex<State>,
}

/// A fresh seed from the operating system's entropy.
fn entropy_seed() -> u64 {
    rand::random()
}

impl Generator {
    pub fn new(seed: u64) -> Generator {
        Generator { state: Mutex::new(State { seed, offset: 0 }) }
    }

    /// A generator seeded from the operating system's entropy.
    pub fn from_entropy() -> Generator {
        Generator::new(entropy_seed())
    }

    /// Restarts the generator's sequence from `seed`.
    pub fn manual_seed(&self, seed: u64) {
        *self.state.lock() = State { seed, offset: 0 };
    }

    /// Restarts the sequence from a seed taken from the operating system's entropy; returns it.
    pub fn reseed(&self) -> u64 {
        let seed = entropy_seed();
        self.manual_seed(seed);
        seed
    }

    pub fn initial_seed(&self) -> u64 {
        self.state.lock().seed
    }

    pub fn state(&self) -> State {
        *self.state.lock()
    }

    pub fn set_state(&self, state: State) {
        *self.state.lock() = state;
    }

    /// Runs `draw` on the streams at the generator's position; when it succeeds,
    /// moves the generator past the number of streams it reports using.
    pub fn draw<R>(&self, draw: impl FnOnce(&Streams) -> Result<(R, u64)>) -> Result<R> {
        let mut state = self.state.lock();
        let streams = Streams::new(*state);
        let (value, used) = draw(&streams)?;
        state.offset = state.offset.wrapping_add(used.max(1));
        Ok(value)
    }
}

/// The global generator: `torch.default_generator`, behind every draw not given
/// another. Seeded from the operating system's entropy at start-up, as torch's.
pub fn default_generator() -> &'static Arc<Generator> {
    static DEFAULT: OnceLock<Arc<Generator>> = OnceLock::new();
    DEFAULT.get_or_init(|| Arc::new(Generator::from_entropy()))
}

/// The streams of one draw: stream `k` is ChaCha12 stream `first + k` of the seed's key.
pub struct Streams {
    key: ChaCha12Rng,
    first: u64,
}

impl Streams {
    fn new(state: State) -> Streams {
        Streams { key: ChaCha12Rng::seed_from_u64(state.seed), first: state.offset }
    }

    pub fn stream(&self, k: u64) -> ChaCha12Rng {
        let mut rng = self.key.clone();
        rng.set_stream(self.first.wrapping_add(k));
        rng.set_word_pos(0);
        rng
    }

    /// Fills `out` block by block (block `k`, which starts at element `k * BLOCK`, from
    /// stream `k`), in parallel when it is large; returns the number of streams used.
    pub fn fill_blocks<T: Send>(&self, out: &mut [T], fill: impl Fn(&mut ChaCha12Rng, usize, &mut [T]) + Sync) -> u64 {
        let poller = Poller::here();
        let run = |(k, block): (usize, &mut [T])| {
            poller.poll();
            fill(&mut self.stream(k as u64), k * BLOCK, block);
        };
        if out.len() >= PARALLEL_MIN_ELEMENTS && crate::kernels::threads::num_threads() > 1 {
            crate::kernels::threads::install(|| out.par_chunks_mut(BLOCK).enumerate().for_each(run));
        } else {
            out.chunks_mut(BLOCK).enumerate().for_each(run);
        }
        out.len().div_ceil(BLOCK) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    fn draw_u64s(g: &Generator, n: usize) -> Vec<u64> {
        g.draw(|s| {
            let mut out = vec![0u64; n];
            let used = s.fill_blocks(&mut out, |rng, _, block| block.iter_mut().for_each(|v| *v = rng.random()));
            Ok((out, used))
        })
        .unwrap()
    }

    #[test]
    fn a_seed_repeats_and_the_sequence_moves_on() {
        let (a, b) = (Generator::new(5), Generator::new(5));
        let first = draw_u64s(&a, 10);
        assert_eq!(first, draw_u64s(&b, 10));
        assert_ne!(first, draw_u64s(&a, 10));
        a.manual_seed(5);
        assert_eq!(first, draw_u64s(&a, 10));
    }

    #[test]
    fn a_large_draw_uses_one_stream_per_block_and_moves_past_them() {
        let g = Generator::new(1);
        let _ = draw_u64s(&g, 3 * BLOCK + 1);
        assert_eq!(g.state(), State { seed: 1, offset: 4 });
    }

    #[test]
    fn a_failed_draw_leaves_the_generator_where_it_was() {
        let g = Generator::new(9);
        let failed: Result<()> = g.draw(|_| Err(Error::InvalidArgument("no".into())));
        assert!(failed.is_err());
        assert_eq!(g.state(), State { seed: 9, offset: 0 });
    }

    #[test]
    fn the_state_round_trips_through_bytes() {
        let state = State { seed: u64::MAX - 3, offset: 77 };
        assert_eq!(State::from_bytes(&state.to_bytes()).unwrap(), state);
        assert!(State::from_bytes(&[0; 15]).is_err());
    }
}
