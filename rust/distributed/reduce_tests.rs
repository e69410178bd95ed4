use super::*;
use crate::error::Error;
use parking_lot::Mutex;
use std::sync::{Arc, Barrier};

/// Ranks as threads of one process, exchanging through shared slots.
struct Exchange {
    slots: Mutex<Vec<Vec<u8>>>,
    barrier: Barrier,
}

pub struct ThreadRank {
    rank: usize,
    size: usize,
    exchange: Arc<Exchange>,
}

impl ThreadRank {
    /// Deposits `send`, then lets `read` see every rank's deposit.
    fn exchange(&self, send: &[u8], read: impl FnOnce(&[Vec<u8>])) {
        self.exchange.slots.lock()[self.rank] = send.to_vec();
        self.exchange.barrier.wait();
        read(&self.exchange.slots.lock());
        self.exchange.barrier.wait();
    }
}

impl Communicator for ThreadRank {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.size
    }
    fn allgather(&self, send: &[u8], recv: &mut [u8]) -> Result<()> {
        self.exchange(send, |all| all.iter().zip(recv.chunks_mut(send.len())).for_each(|(a, r)| r.copy_from_slice(a)));
        Ok(())
    }
    fn alltoall(&self, send: &[u8], recv: &mut [u8]) -> Result<()> {
        let block = send.len() / self.size;
        let me = self.rank;
        self.exchange(send, |all| {
            for (from, r) in all.iter().zip(recv.chunks_mut(block)) {
                r.copy_from_slice(&from[me * block..(me + 1) * block]);
            }
        });
        Ok(())
    }
    fn broadcast(&self, buffer: &mut [u8], root: usize) -> Result<()> {
        let mine = buffer.to_vec();
        self.exchange(&mine, |all| buffer.copy_from_slice(&all[root]));
        Ok(())
    }
    fn allreduce_sum(&self, _send: &[u8], _recv: &mut [u8], _f64: bool) -> Result<()> {
        Err(Error::Internal("not simulated".into()))
    }
    fn transport(&self) -> String {
        "threads".into()
    }
}

/// Runs `f` on `size` thread ranks and returns each rank's result.
pub fn on_thread_ranks<R: Send>(size: usize, f: impl Fn(&dyn Communicator) -> R + Sync) -> Vec<R> {
    let exchange = Arc::new(Exchange { slots: Mutex::new(vec![vec![]; size]), barrier: Barrier::new(size) });
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..size)
            .map(|rank| {
                let comm = ThreadRank { rank, size, exchange: exchange.clone() };
                let f = &f;
                scope.spawn(move || f(&comm))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

fn values_of(rank: usize, n: usize) -> Vec<f32> {
    (0..n).map(|i| ((i * 7919 + rank * 104_729) % 1000) as f32 * 0.001 + 1e-7 * rank as f32).collect()
}

#[test]
fn every_rank_gets_the_rank_order_sum_on_both_paths() {
    // 10 elements allgather; 200_000 (over GATHER_LIMIT, not a multiple of 3) go through alltoall.
    for n in [10, 200_000] {
        let results = on_thread_ranks(3, |comm| {
            let mut out = vec![0.0f32; n];
            sum_in_rank_order(comm, &values_of(comm.rank(), n), &mut out, false).unwrap();
            out
        });
        let (a, b, c) = (values_of(0, n), values_of(1, n), values_of(2, n));
        let expected: Vec<f32> = (0..n).map(|i| (a[i] + b[i]) + c[i]).collect();
        for out in &results {
            assert!(out.iter().zip(&expected).all(|(a, b)| a.to_bits() == b.to_bits()), "n = {n}");
        }
    }
}

#[test]
fn average_divides_the_sum_by_the_number_of_ranks() {
    let results = on_thread_ranks(2, |comm| average(comm, &[comm.rank() as f64 + 1.0, 4.0], Summation::RankOrder));
    for out in results {
        assert_eq!(out.unwrap(), vec![1.5, 4.0]);
    }
}
