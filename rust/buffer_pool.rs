//! Recycling of large buffers. When a float tensor of 128 KiB or more is
//! freed, its memory is kept here and handed to the next tensor of exactly the
//! same size (kernels also return large scratch copies here).
//!
//! A training step makes the same tensors every time. Fresh memory from the
//! kernel costs a page fault for each page that is touched first. At 1024×4096
//! that cost was about 1.5 ms per 16 MiB output, against about 0.3 ms for
//! writing the values. numpy's hand-written in-place loop pays it once, so
//! reused buffers are how rustgrad's steps avoid paying it on every step.
//!
//! The pool is bounded (see `capacity_bytes`). When it is full, the buffers it
//! has held longest are freed first.
//!
//! A static plan keeps the buffers of its own memory plan (`Kept`) and, before
//! each step, offers that step's buffers to the allocations of this thread
//! (`offer`): an allocation of the same type and size takes an offered buffer
//! first, however small (the pool itself keeps only large ones).

use parking_lot::Mutex;
use std::any::TypeId;
use std::cell::RefCell;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Smaller buffers are left to the allocator, which keeps them for reuse on its
/// own. From glibc's mmap threshold (128 KiB) up, freed memory may go back to the
/// kernel and cost page faults when it is allocated again: a 1000×64×100 product,
/// whose 400 KB output fell below the earlier 1 MiB limit, ran at about
/// 310 GFLOP/s without the pool and 410 with it.
const MIN_BYTES: usize = 128 << 10;
/// At most this much freed memory is kept, and never more than an eighth of the
/// memory this process may use (RAM, or the cgroup's limit when lower).
/// The 1024×4096×4096×1000 training step recycles about 200 MiB per step.
const MAX_BYTES: usize = 512 << 20;

struct Pooled {
    type_id: TypeId,
    capacity: usize,
    bytes: usize,
    ptr: usize,
    free: unsafe fn(usize, usize),
}

#[derive(Default)]
struct Pool {
    /// Oldest first.
    buffers: Vec<Pooled>,
    bytes: usize,
}

static POOL: Mutex<Pool> = Mutex::new(Pool { buffers: Vec::new(), bytes: 0 });

/// Set in a forked child: another thread of the parent may have held the lock at
/// the fork, so the child leaves the inherited pool alone (its buffers leak).
static FORKED: AtomicBool = AtomicBool::new(false);

/// Stops the pool in a forked child (called from the fork handler).
pub fn forget_after_fork() {
    FORKED.store(true, Ordering::Relaxed);
}

fn in_use() -> bool {
    !FORKED.load(Ordering::Relaxed) && capacity_bytes() > 0
}

/// The pool's size; `RUSTGRAD_BUFFER_POOL=0` makes it 0 (to measure what it brings).
fn capacity_bytes() -> usize {
    static CAPACITY: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CAPACITY.get_or_init(|| match std::env::var("RUSTGRAD_BUFFER_POOL").as_deref() {
        Ok("0") => 0,
        _ => MAX_BYTES.min(crate::storage::physical_memory_bytes().min(cgroup_limit_bytes()) / 8),
    })
}

/// The cgroup v2 (or v1) memory limit of this process, if it has one.
fn cgroup_limit_bytes() -> usize {
    ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"]
        .iter()
        .find_map(|path| std::fs::read_to_string(path).ok()?.trim().parse().ok())
        .unwrap_or(usize::MAX)
}

/// # Safety
/// `ptr` and `capacity` must come from a `Vec<T>` that was forgotten, and be used once.
unsafe fn free_raw<T>(ptr: usize, capacity: usize) {
    // SAFETY: the caller's contract; the length 0 means no element is dropped.
    drop(unsafe { Vec::from_raw_parts(ptr as *mut T, 0, capacity) });
}

/// A buffer kept outside the pool (by a plan's memory plan), with its type erased.
/// Every element is initialised; dropping it frees the memory.
pub struct Kept(Pooled);

impl Kept {
    /// Keeps `v`'s memory, if it is full (so every element is initialised) and not empty.
    pub fn new<T: Copy + 'static>(v: Vec<T>) -> Option<Kept> {
        if v.len() != v.capacity() || v.capacity() == 0 {
            return None;
        }
        let mut v = ManuallyDrop::new(v);
        Some(Kept(Pooled {
            type_id: TypeId::of::<T>(),
            capacity: v.capacity(),
            bytes: v.capacity().saturating_mul(std::mem::size_of::<T>()),
            ptr: v.as_mut_ptr() as usize,
            free: free_raw::<T>,
        }))
    }

    fn into_vec<T: Copy + 'static>(self) -> Vec<T> {
        let this = ManuallyDrop::new(self);
        // SAFETY: `matches` checked the type and capacity; the entry came from a forgotten
        // Vec<T> and, with `self` forgotten, is turned back into one exactly once.
        unsafe { Vec::from_raw_parts(this.0.ptr as *mut T, 0, this.0.capacity) }
    }

    #[cfg(test)]
    pub fn address(&self) -> usize {
        self.0.ptr
    }

    #[cfg(test)]
    pub fn capacity(&self) -> usize {
        self.0.capacity
    }

    fn matches<T: 'static>(&self, capacity: usize) -> bool {
        self.0.type_id == TypeId::of::<T>() && self.0.capacity == capacity
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        // SAFETY: the entry is the forgotten Vec it was made from, freed once here.
        unsafe { (self.0.free)(self.0.ptr, self.0.capacity) };
    }
}

thread_local! {
    /// Buffers offered to this thread's next allocations, each with its owner's tag.
    static OFFERED: RefCell<Vec<(usize, Kept)>> = const { RefCell::new(Vec::new()) };
}

/// How many buffers are offered, on all threads. Reaching a thread-local from a
/// shared library costs a call (about 25 ns per new tensor, measured), so every
/// allocation looks at this first and skips the thread-local while it is zero.
static OFFERED_ANYWHERE: AtomicUsize = AtomicUsize::new(0);

/// Offers `buffer` to the allocations of this thread until `withdraw`: the next
/// `take` of its type and capacity gets it.
pub fn offer(tag: usize, buffer: Kept) {
    OFFERED_ANYWHERE.fetch_add(1, Ordering::Relaxed);
    OFFERED.with_borrow_mut(|offered| offered.push((tag, buffer)));
}

/// Hands back, with their tags, the offered buffers no allocation took.
pub fn withdraw(mut back: impl FnMut(usize, Kept)) {
    let mut offered = OFFERED.with_borrow_mut(std::mem::take);
    OFFERED_ANYWHERE.fetch_sub(offered.len(), Ordering::Relaxed);
    for (tag, buffer) in offered.drain(..) {
        back(tag, buffer);
    }
    // Keep the vector's memory for the next offers.
    OFFERED.with_borrow_mut(|slot| *slot = offered);
}

#[inline(never)]
fn take_offered<T: Copy + 'static>(capacity: usize) -> Option<Vec<T>> {
    OFFERED.with_borrow_mut(|offered| {
        let found = offered.iter().position(|(_, b)| b.matches::<T>(capacity))?;
        #[cfg(test)]
        OFFERS_TAKEN.set(OFFERS_TAKEN.get() + 1);
        OFFERED_ANYWHERE.fetch_sub(1, Ordering::Relaxed);
        Some(offered.swap_remove(found).1.into_vec())
    })
}

#[cfg(test)]
thread_local! {
    static OFFERS_TAKEN: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// How many offered buffers allocations on this thread have taken.
#[cfg(test)]
pub fn offers_taken() -> usize {
    OFFERS_TAKEN.get()
}

/// Keeps `v`'s memory for a later `take` of the same type and capacity (or frees
/// it, when it is small, not full, more than a quarter of the pool, or the pool is off).
pub fn give<T: Copy + 'static>(v: Vec<T>) {
    let bytes = v.capacity().saturating_mul(std::mem::size_of::<T>());
    // Small buffers (every tensor of a tiny op) leave before anything else is looked at.
    if bytes < MIN_BYTES || !in_use() {
        return;
    }
    let limit = capacity_bytes();
    // Only full vectors, so that every element of a recycled buffer is initialised.
    // A buffer may fill at most a quarter of the pool, so one huge tensor does not flush it.
    if bytes < MIN_BYTES || bytes > limit / 4 || v.len() != v.capacity() {
        return;
    }
    let mut v = ManuallyDrop::new(v);
    let entry = Pooled {
        type_id: TypeId::of::<T>(),
        capacity: v.capacity(),
        bytes,
        ptr: v.as_mut_ptr() as usize,
        free: free_raw::<T>,
    };
    let evicted = {
        let mut pool = POOL.lock();
        let mut evicted = Vec::new();
        while pool.bytes + bytes > limit && !pool.buffers.is_empty() {
            let old = pool.buffers.remove(0);
            pool.bytes -= old.bytes;
            evicted.push(old);
        }
        pool.bytes += bytes;
        pool.buffers.push(entry);
        evicted
    };
    for old in evicted {
        // SAFETY: each entry is the forgotten Vec it was made from, removed from the pool once.
        unsafe { (old.free)(old.ptr, old.capacity) };
    }
}

/// An empty vector with exactly `capacity` elements of room, made from an offered
/// buffer of that size, or a freed one, if the pool holds one.
pub fn take<T: Copy + 'static>(capacity: usize) -> Option<Vec<T>> {
    // This thread's own offers were counted before it made them, so it sees them.
    if OFFERED_ANYWHERE.load(Ordering::Relaxed) != 0 {
        if let Some(v) = take_offered(capacity) {
            return Some(v);
        }
    }
    if capacity.saturating_mul(std::mem::size_of::<T>()) < MIN_BYTES || !in_use() {
        return None;
    }
    let mut pool = POOL.lock();
    let found = pool.buffers.iter().rposition(|b| b.type_id == TypeId::of::<T>() && b.capacity == capacity)?;
    let entry = pool.buffers.remove(found);
    pool.bytes -= entry.bytes;
    // SAFETY: the entry was made by `give::<T>` (same TypeId) from a forgotten Vec<T>
    // with this capacity, and removing it from the pool hands it out exactly once.
    Some(unsafe { Vec::from_raw_parts(entry.ptr as *mut T, 0, entry.capacity) })
}

/// Bytes the pool holds now.
pub fn pooled_bytes() -> usize {
    POOL.lock().bytes
}

/// Frees every buffer the pool holds.
pub fn empty() {
    if FORKED.load(Ordering::Relaxed) {
        return;
    }
    let buffers = std::mem::take(&mut *POOL.lock());
    for old in buffers.buffers {
        // SAFETY: each entry is the forgotten Vec it was made from, taken out of the pool once.
        unsafe { (old.free)(old.ptr, old.capacity) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_offered_buffer_goes_to_the_first_allocation_of_its_type_and_size_on_this_thread() {
        let kept = Kept::new(vec![1.0f32; 10]).expect("a full vector");
        let address = kept.0.ptr;
        offer(7, kept);
        assert!(take::<f64>(10).is_none() && take::<f32>(11).is_none());
        let other_thread = std::thread::spawn(|| take::<f32>(10).is_none()).join();
        assert!(other_thread.unwrap_or(false), "another thread must not see the offer");
        let v = take::<f32>(10).expect("the offered buffer");
        assert_eq!((v.as_ptr() as usize, v.len(), v.capacity()), (address, 0, 10));
        offer(3, Kept::new(vec![0u8; 4]).expect("a full vector"));
        let mut back = vec![];
        withdraw(|tag, buffer| back.push((tag, buffer.0.capacity)));
        assert_eq!(back, vec![(3, 4)]);
        withdraw(|_, _| panic!("nothing is offered any more"));
        assert!(Kept::new(Vec::<f32>::with_capacity(4)).is_none(), "uninitialised room must not be kept");
    }

    // One test, because the pool is shared by the whole process.
    #[test]
    fn freed_buffers_come_back_for_the_same_type_and_size_only() {
        let len = (MIN_BYTES / 4) * 3 + 5;
        let mut v: Vec<f32> = Vec::with_capacity(len);
        v.resize(len, 1.5);
        let address = v.as_ptr() as usize;
        let before = pooled_bytes();
        give(v);
        assert_eq!(pooled_bytes(), before + len * 4);
        assert!(take::<f64>(len).is_none(), "another type must not get the buffer");
        assert!(take::<f32>(len + 1).is_none(), "another size must not get the buffer");
        let mut partly_filled: Vec<f32> = Vec::with_capacity(len + 1);
        partly_filled.resize(len, 0.0);
        give(partly_filled);
        assert!(take::<f32>(len + 1).is_none(), "a buffer with uninitialised room must not be kept");
        let back = take::<f32>(len).expect("the freed buffer");
        assert_eq!((back.as_ptr() as usize, back.len(), back.capacity()), (address, 0, len));
        assert_eq!(pooled_bytes(), before);

        give(vec![0u8; 16]);
        assert_eq!(pooled_bytes(), before, "small buffers are not kept");
    }

    #[test]
    fn zeroed_and_overwritable_vectors_take_a_freed_buffer_of_their_size() {
        let len = (MIN_BYTES / 4) * 5 + 7;
        for zeroed in [true, false] {
            let freed = vec![2.5f32; len];
            let address = freed.as_ptr() as usize;
            give(freed);
            let v: Vec<f32> =
                if zeroed { crate::storage::zeroed_vec(len) } else { crate::storage::overwritable_vec(len) };
            assert_eq!((v.as_ptr() as usize, v.len()), (address, len), "zeroed: {zeroed}");
            let want = if zeroed { 0.0 } else { 2.5 };
            assert!(v.iter().all(|&x| x == want), "zeroed: {zeroed}");
        }
    }
}
