//! The closed-loop generator on io_uring: one multishot receive per connection into
//! buffers the kernel picks from a ring it shares with us, and the sends, all submitted
//! and reaped by one `io_uring_enter` per round.
//!
//! Why (bench/floor.c `-m` against its epoll loop, nginx and redis on loopback): the
//! epoll loop pays per reply an `epoll_wait` share, the socket's poll callback and a
//! re-poll, and a `recv` system call; an armed multishot receive pays none of these, and
//! the completion is posted when this thread enters the ring (`DEFER_TASKRUN`), not by
//! interrupting it. That is about 5% less CPU per request at the floor (4% for kv at
//! pipeline 1). A one-shot receive per reply (the floor's `-u`) saves nothing: it
//! re-arms the socket's poll every time.
//!
//! Used for the closed loop only (an open loop sleeps on a timer between sends, which
//! the epoll loop does well), and only where the kernel has what it needs (6.1: single
//! issuer, deferred task work; multishot receive and provided-buffer rings are older)
//! and lets this process create a ring (`kernel.io_uring_disabled`, seccomp). `auto`
//! falls back to epoll otherwise and says why in the result; `io_uring` asked for
//! explicitly fails instead.
//!
//! Memory the kernel may touch (the provided buffers, each send's bytes) stays put until
//! the kernel is done with it: a send's buffer is the connection's only while its
//! completion is outstanding (a reopened connection leaves it with the old socket until
//! then), and at the end every socket is shut down and every completion reaped; if some
//! never come, the memory is leaked rather than freed under the kernel.

use std::alloc::{alloc, alloc_zeroed, dealloc, Layout};
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

use io_uring::types::{BufRingEntry, Fixed, SubmitArgs, Timespec};
use io_uring::{cqueue, opcode, squeue, EnterFlags, IoUring};

use super::{parse_from, parse_replies, Conn, Connect, Loop, Next, CLOSED, READ_CHUNK};
use crate::load::{ClientIo, LoadShape, LoadSpec, Protocol};

/// Bytes per provided buffer: a reply larger than this arrives in several completions.
const BUF_SIZE: usize = 16 * 1024;
/// The buffer group's id (one group per ring).
const GROUP: u16 = 0;
/// The most provided buffers a ring has: 16 MiB of them (unit tests use few, to run out).
#[cfg(not(test))]
const MAX_BUFFERS: usize = 1024;
#[cfg(test)]
const MAX_BUFFERS: usize = 64;
/// Receives that ended out of buffers and were armed again (unit tests check the path).
#[cfg(test)]
static OUT_OF_BUFFERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
/// How long the end waits for the kernel to hand back what it holds.
const RELEASE_WAIT: Duration = Duration::from_secs(2);

const RECV: u64 = 0;
const SEND: u64 = 1;
/// A reconnect's poll for its handshake's end (writable, or an error).
const CONNECT: u64 = 2;
/// The `user_data` of the round's timer (no connection has this slot).
const TICK: u64 = u64::MAX;
/// The longest a round waits when nothing completes (Ctrl-C, a stalled server).
const TICK_MAX: Duration = Duration::from_millis(100);

/// io_uring_register(2)'s opcode and io_uring_enter(2)'s flags for a ring entered by its
/// registered index (the io-uring crate registers one, but keeps the index inside a
/// short-lived `Submitter`, so the enter that waits each round is made here).
const IORING_REGISTER_RING_FDS: libc::c_uint = 20;
const IORING_UNREGISTER_RING_FDS: libc::c_uint = 21;
const IORING_ENTER_GETEVENTS: libc::c_uint = 1;
const IORING_ENTER_REGISTERED_RING: libc::c_uint = 1 << 4;

/// `struct io_uring_rsrc_update`.
#[repr(C)]
struct RsrcUpdate {
    offset: u32,
    resv: u32,
    data: u64,
}

/// One `IORING_(UN)REGISTER_RING_FDS` update of the ring's registered descriptors: the
/// index it took, None where the call did not take it.
fn update_ring_fds(ring: &IoUring, opcode: libc::c_uint, offset: u32, data: u64) -> Option<u32> {
    let mut up = RsrcUpdate {
        offset,
        resv: 0,
        data,
    };
    // SAFETY: one valid update entry, as the call's count says.
    let r = unsafe {
        libc::syscall(
            libc::SYS_io_uring_register,
            ring.as_raw_fd(),
            opcode,
            &mut up as *mut RsrcUpdate,
            1u32,
        )
    };
    (r == 1).then_some(up.offset)
}

/// Register the ring's own descriptor with it: entered by index, the kernel skips the
/// file lookup of every `io_uring_enter` (Linux 5.18). None where it cannot.
fn register_ring_fd(ring: &IoUring) -> Option<u32> {
    update_ring_fds(
        ring,
        IORING_REGISTER_RING_FDS,
        u32::MAX,
        ring.as_raw_fd() as u64,
    )
}

/// Undo [`register_ring_fd`].
fn unregister_ring_fd(ring: &IoUring, index: u32) {
    update_ring_fds(ring, IORING_UNREGISTER_RING_FDS, index, 0);
}

/// `user_data`: slot (32 bits), the connection's generation (30: a reopened
/// connection's old socket still completes), and the operation (2).
fn tag(slot: usize, gen: u32, op: u64) -> u64 {
    (slot as u64) << 32 | u64::from(gen & GEN_MASK) << 2 | op
}

fn untag(data: u64) -> (usize, u32, u64) {
    (
        (data >> 32) as usize,
        ((data >> 2) as u32) & GEN_MASK,
        data & 3,
    )
}

/// The generations a slot counts through before it starts again.
const GEN_MASK: u32 = 0x3fff_ffff;

/// The ring's view of one connection.
#[derive(Default)]
struct Slot {
    gen: u32,
    /// The bytes of the send in flight (the kernel reads them until its completion).
    sending: Vec<u8>,
    sent: usize,
    send_busy: bool,
    recv_armed: bool,
    /// The generation whose socket is in the ring's file table at this slot's index.
    registered: Option<u32>,
}

/// The provided buffers: a ring of entries the kernel takes buffers from, and the
/// buffers. Both are ours to free only once the kernel is done (see the module doc).
struct Buffers {
    entries: *mut BufRingEntry,
    n: u16,
    mem: *mut u8,
    /// Buffers handed back since the tail was last published.
    added: u16,
    tail: u16,
}

impl Buffers {
    fn layouts(n: u16) -> (Layout, Layout) {
        // The kernel wants the entry ring page-aligned.
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
        let entries = Layout::from_size_align(usize::from(n) * 16, page).expect("layout");
        let mem = Layout::from_size_align(usize::from(n) * BUF_SIZE, 64).expect("layout");
        (entries, mem)
    }

    fn new(n: u16) -> io::Result<Buffers> {
        let (le, lm) = Buffers::layouts(n);
        // The buffers are not cleared: the kernel fills each before a completion hands it
        // over, and only the bytes it wrote are read (`Buffers::bytes`). Clearing them
        // wrote 2-16 MiB at each test's start (aligned memory is zeroed by hand),
        // faulting in pages that small replies never reach.
        // SAFETY: non-zero sizes; null is checked.
        let (entries, mem) = unsafe { (alloc_zeroed(le), alloc(lm)) };
        if entries.is_null() || mem.is_null() {
            return Err(io::Error::from(io::ErrorKind::OutOfMemory));
        }
        let mut b = Buffers {
            entries: entries.cast(),
            n,
            mem,
            added: 0,
            tail: 0,
        };
        for bid in 0..n {
            b.give(bid);
        }
        b.publish();
        Ok(b)
    }

    /// Hand buffer `bid` back to the kernel (seen once [`Buffers::publish`] runs).
    #[inline]
    fn give(&mut self, bid: u16) {
        let i = usize::from(self.tail.wrapping_add(self.added) & (self.n - 1));
        // SAFETY: i < n, inside the entry ring; the kernel reads an entry only between
        // the old and the new tail, and this one is past the published tail.
        let e = unsafe { &mut *self.entries.add(i) };
        e.set_addr(self.buf_ptr(bid) as u64);
        e.set_len(BUF_SIZE as u32);
        e.set_bid(bid);
        self.added += 1;
    }

    #[inline]
    fn publish(&mut self) {
        if self.added == 0 {
            return;
        }
        self.tail = self.tail.wrapping_add(self.added);
        self.added = 0;
        // SAFETY: the tail is the first entry's reserved field, a u16 the kernel reads
        // atomically (liburing's io_uring_buf_ring_advance: a release store).
        unsafe {
            let tail = BufRingEntry::tail(self.entries) as *const AtomicU16;
            (*tail).store(self.tail, Ordering::Release);
        }
    }

    #[inline]
    fn buf_ptr(&self, bid: u16) -> *mut u8 {
        // SAFETY: bid < n, so inside the allocation.
        unsafe { self.mem.add(usize::from(bid) * BUF_SIZE) }
    }

    /// The first `len` bytes of buffer `bid`, which the kernel has filled and not yet
    /// been given back.
    #[inline]
    fn bytes(&self, bid: u16, len: usize) -> &[u8] {
        // SAFETY: the completion said the kernel wrote `len` <= BUF_SIZE bytes there,
        // and the buffer is not handed back before this slice is dropped.
        unsafe { std::slice::from_raw_parts(self.buf_ptr(bid), len.min(BUF_SIZE)) }
    }
}

impl Drop for Buffers {
    fn drop(&mut self) {
        let (le, lm) = Buffers::layouts(self.n);
        // SAFETY: allocated in `new` with these layouts; the ring (which could write
        // them) is gone or has handed everything back (see `Ring::drop`).
        unsafe {
            dealloc(self.entries.cast(), le);
            dealloc(self.mem, lm);
        }
    }
}

/// One worker's ring.
pub(super) struct Ring {
    ring: Option<IoUring>,
    bufs: Option<Buffers>,
    slots: Vec<Slot>,
    /// Send buffers of reopened connections, until their completions come.
    orphans: Vec<(u64, Vec<u8>)>,
    cqes: Vec<cqueue::Entry>,
    /// The timer's duration, read by the kernel when it takes the entry.
    tick: Box<Timespec>,
    /// The ring's registered index, when it has one.
    index: Option<u32>,
    /// Receives still armed on sockets of reopened connections, until their last
    /// completions come.
    stale_recvs: usize,
    /// The flags of every wait: `NO_IOWAIT` where the kernel has it (see [`Ring::wait`]).
    wait_flags: EnterFlags,
}

impl Ring {
    /// A ring for this spec's worker of `conns` connections; None for the epoll loop (an
    /// open loop, or epoll asked for); `Some(Err(why))` when `auto` finds no io_uring
    /// here (the epoll loop runs, and the result says why).
    pub(super) fn for_spec(
        spec: &LoadSpec,
        conns: usize,
    ) -> anyhow::Result<Option<Result<Ring, String>>> {
        let closed = spec.shape == LoadShape::Closed;
        match spec.client_io {
            ClientIo::Epoll => Ok(None),
            ClientIo::Auto if !closed => Ok(None),
            ClientIo::IoUring if !closed => anyhow::bail!(
                "client io io_uring drives closed loops only; an open loop (a rate) runs on \
                 epoll: leave client_io at auto or set it to epoll"
            ),
            ClientIo::Auto => Ok(Some(Ring::new(conns).map_err(|e| e.to_string()))),
            ClientIo::IoUring => Ring::new(conns).map(|r| Some(Ok(r))).map_err(|e| {
                anyhow::anyhow!("{e}; leave client_io at auto (epoll where io_uring is missing)")
            }),
        }
    }

    fn new(conns: usize) -> anyhow::Result<Ring> {
        let sq = (2 * conns + 16).next_power_of_two().min(32_768) as u32;
        let ring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            // A failing entry does not stop the ones after it (a reopen relies on every
            // queued entry being submitted before the slot's file is replaced).
            .setup_submit_all()
            .setup_cqsize(sq * 2)
            .build(sq)
            .map_err(|e| {
                anyhow::anyhow!(
                    "io_uring unavailable ({e}): it needs Linux 6.1 or later, and \
                     kernel.io_uring_disabled at 0 (or no seccomp filter against it)"
                )
            })?;
        ring.submitter()
            .register_files_sparse(conns as u32)
            .map_err(|e| {
                anyhow::anyhow!("io_uring file table unavailable ({e}): it needs Linux 5.19")
            })?;
        // Enough buffers for a reply per connection per round, twice over, up to 16 MiB a
        // thread: past that, a round in which more connections than buffers have data
        // ends some receives (ENOBUFS), and they are armed again, which costs a little.
        let n = (2 * conns).next_power_of_two().clamp(64, MAX_BUFFERS) as u16;
        let bufs = Buffers::new(n)?;
        // SAFETY: the entry ring is page-aligned, n entries long, and lives until the
        // ring is dropped (Ring::drop drops the ring first).
        unsafe {
            ring.submitter()
                .register_buf_ring_with_flags(bufs.entries as u64, n, GROUP, 0)
        }
        .map_err(|e| {
            anyhow::anyhow!("io_uring provided buffers unavailable ({e}): it needs Linux 5.19")
        })?;
        let index = register_ring_fd(&ring);
        let wait_flags = if ring.params().is_feature_no_iowait() {
            EnterFlags::NO_IOWAIT
        } else {
            EnterFlags::empty()
        };
        Ok(Ring {
            index,
            stale_recvs: 0,
            wait_flags,
            ring: Some(ring),
            bufs: Some(bufs),
            slots: (0..conns).map(|_| Slot::default()).collect(),
            orphans: Vec::new(),
            cqes: Vec::with_capacity(sq as usize * 2),
            tick: Box::new(Timespec::new()),
        })
    }

    fn ring(&mut self) -> &mut IoUring {
        self.ring.as_mut().expect("ring in use")
    }

    /// Queue one entry, submitting what is queued when the queue is full.
    fn push(&mut self, e: squeue::Entry) -> io::Result<()> {
        let ring = self.ring();
        loop {
            // SAFETY: what the entry points at (a slot's send buffer, the provided
            // buffers) outlives its completion (see the module doc).
            if unsafe { ring.submission().push(&e) }.is_ok() {
                return Ok(());
            }
            ring.submit()?;
        }
    }

    /// Arm the connection's receive, its socket first put in the ring's file table at the
    /// slot's index when it is new (sends and receives then name it by index: no file
    /// lookup per request).
    fn arm_recv<P>(&mut self, slot: usize, c: &Conn<P>) -> io::Result<()> {
        if !self.register(slot, c)? {
            return Ok(());
        }
        let gen = self.slots[slot].gen;
        let e = opcode::RecvMulti::new(Fixed(slot as u32), GROUP)
            .build()
            .user_data(tag(slot, gen, RECV));
        self.push(e)?;
        self.slots[slot].recv_armed = true;
        Ok(())
    }

    /// Put the connection's socket in the ring's file table at the slot's index, when it
    /// is new. False when it has none.
    fn register<P>(&mut self, slot: usize, c: &Conn<P>) -> io::Result<bool> {
        let Some(s) = c.stream.as_ref() else {
            return Ok(false);
        };
        let gen = self.slots[slot].gen;
        if self.slots[slot].registered != Some(gen) {
            // What is queued names the slot's old socket: submitted first, it takes that
            // one (a file is looked up when its entry is submitted).
            self.ring().submit()?;
            self.ring()
                .submitter()
                .register_files_update(slot as u32, &[s.as_raw_fd()])?;
            self.slots[slot].registered = Some(gen);
        }
        Ok(true)
    }

    /// Wait for a reconnect's handshake: a one-shot poll for writable (an error ends it
    /// too). It holds no memory of ours, so the end need not wait for it.
    fn arm_connect<P>(&mut self, slot: usize, c: &Conn<P>) -> io::Result<()> {
        if !self.register(slot, c)? {
            return Ok(());
        }
        let e = opcode::PollAdd::new(Fixed(slot as u32), libc::POLLOUT as u32)
            .build()
            .user_data(tag(slot, self.slots[slot].gen, CONNECT));
        self.push(e)
    }

    /// Send what the connection has queued, unless a send is already in flight (its
    /// completion sends the rest).
    fn flush<P>(&mut self, slot: usize, c: &mut Conn<P>) -> io::Result<()> {
        let s = &mut self.slots[slot];
        if c.stream.is_none() || s.send_busy || c.wbuf.is_empty() {
            return Ok(());
        }
        std::mem::swap(&mut s.sending, &mut c.wbuf);
        c.wbuf.clear();
        s.sent = 0;
        s.send_busy = true;
        let e = send_entry(slot, &s.sending, 0, tag(slot, s.gen, SEND));
        self.push(e)
    }

    /// Close the connection's socket (its receive then completes, empty) and start a
    /// new one's connect, polled for its end ([`Loop::reopen`]). A send still in flight
    /// keeps its buffer until its completion comes.
    fn reopen<P: Protocol>(
        &mut self,
        lp: &mut Loop<'_>,
        slot: usize,
        c: &mut Conn<P>,
    ) -> io::Result<()> {
        self.close_conn(slot, c);
        if lp.reopen(c) {
            self.arm_connect(slot, c)?;
        }
        Ok(())
    }

    /// Close the connection's socket (its receive then completes, empty), and forget
    /// what the ring still does for it: a send in flight keeps its buffer until its
    /// completion comes, an armed receive is counted stale.
    fn close_conn<P: Protocol>(&mut self, slot: usize, c: &mut Conn<P>) {
        if let Some(s) = c.stream.take() {
            // SAFETY: a valid socket; shut down so the armed receive ends (close alone
            // would not: the ring holds the socket open).
            unsafe { libc::shutdown(s.as_raw_fd(), libc::SHUT_RDWR) };
        }
        let s = &mut self.slots[slot];
        if s.send_busy {
            self.orphans
                .push((tag(slot, s.gen, SEND), std::mem::take(&mut s.sending)));
            s.send_busy = false;
        }
        s.gen = (s.gen + 1) & GEN_MASK;
        if std::mem::take(&mut s.recv_armed) {
            self.stale_recvs += 1;
        }
    }

    /// Arm the round's timer to fire in `after`. A timer armed once per firing (every
    /// 100 ms at most) rather than a timeout on every wait: a timed wait starts and
    /// cancels a kernel timer each time it sleeps, 1-4% of the CPU per request.
    fn arm_tick(&mut self, after: Duration) -> io::Result<()> {
        let after = after.max(Duration::from_micros(1));
        *self.tick = Timespec::new()
            .sec(after.as_secs())
            .nsec(after.subsec_nanos());
        let ts: *const Timespec = &*self.tick;
        self.push(opcode::Timeout::new(ts).build().user_data(TICK))
    }

    /// Submit what is queued and wait for one completion (the round's timer bounds the
    /// wait; `timeout` bounds it when the timer is not armed); then take every completion
    /// there is.
    ///
    /// One, not more: with deferred task work the kernel wakes this thread only once the
    /// count waited for is pending, so waiting for several would save wake-ups, but each
    /// reply after the first would then be seen, and its latency recorded, up to one reply
    /// interval late. And it saves little: at the floor (bench/floor.c `-m`, nginx, 50
    /// connections, 6 pairs) a count of 3 cost 0.92-1.03x the CPU per request of 1 (median
    /// 0.98), 4 cost 1.08x, and 4-16 bounded by a 200 us timeout 1.3-1.6x (the timer).
    ///
    /// The wait is not counted as iowait where the kernel lets it be (Linux 6.15,
    /// `IORING_ENTER_NO_IOWAIT`). Otherwise a thread waiting with receives armed is "in
    /// iowait", and the idle time of the load generator's CPUs shows in `/proc/stat` (and
    /// mpstat, and this tool's telemetry) as %iowait: up to 80% of a client CPU in a kv
    /// test, read by anyone as a disk. It is idle time (busy figures leave it out either
    /// way), and no reference tool's epoll wait is counted so; on hosts with schedutil,
    /// iowait also boosts the waiting CPU's frequency, which epoll clients do not get.
    fn wait(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        let flags = self.wait_flags;
        let waited = match (timeout, self.index) {
            (None, Some(index)) => {
                let queued = self.ring().submission().len() as libc::c_uint;
                // SAFETY: io_uring_enter on this ring's registered index: the queued
                // entries (published by the submission queue's drop) and a wait for one
                // completion; no argument pointer.
                let r = unsafe {
                    libc::syscall(
                        libc::SYS_io_uring_enter,
                        index,
                        queued,
                        1 as libc::c_uint,
                        IORING_ENTER_GETEVENTS | IORING_ENTER_REGISTERED_RING | flags.bits(),
                        std::ptr::null::<libc::c_void>(),
                        0usize,
                    )
                };
                if r < 0 {
                    Err(io::Error::last_os_error())
                } else {
                    Ok(r as usize)
                }
            }
            (None, None) if !flags.is_empty() => self
                .ring()
                .submitter()
                .submit_with_args_and_flags(1, &SubmitArgs::new(), flags),
            (None, None) => self.ring().submit_and_wait(1),
            (Some(t), _) => {
                let ts = Timespec::new().sec(t.as_secs()).nsec(t.subsec_nanos());
                let args = SubmitArgs::new().timespec(&ts);
                self.ring()
                    .submitter()
                    .submit_with_args_and_flags(1, &args, flags)
            }
        };
        match waited {
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ETIME | libc::EINTR | libc::EBUSY)
                ) => {}
            Err(e) => return Err(e),
        }
        let mut cqes = std::mem::take(&mut self.cqes);
        cqes.extend(self.ring().completion());
        self.cqes = cqes;
        Ok(())
    }

    /// Is the kernel still holding anything of ours (a receive armed, a send's bytes)?
    fn holding(&self) -> bool {
        self.stale_recvs > 0
            || !self.orphans.is_empty()
            || self.slots.iter().any(|s| s.send_busy || s.recv_armed)
    }

    /// A completion of an old socket's (or, at the end, any socket's) operation: give
    /// back what it held. Returns the bytes a send of it sent.
    fn retire(&mut self, data: u64, res: i32, flags: u32) -> u64 {
        if data == TICK {
            return 0;
        }
        if let Some(bid) = cqueue::buffer_select(flags) {
            if let Some(b) = self.bufs.as_mut() {
                b.give(bid);
            }
        }
        let (slot, gen, op) = untag(data);
        let last = op == SEND || !cqueue::more(flags);
        let current = self.slots.get(slot).is_some_and(|s| s.gen == gen);
        match (op, current) {
            (CONNECT, _) => {}
            (SEND, true) => self.slots[slot].send_busy = false,
            (SEND, false) => self.orphans.retain(|(d, _)| *d != data),
            (_, true) if last => self.slots[slot].recv_armed = false,
            (_, false) if last => self.stale_recvs = self.stale_recvs.saturating_sub(1),
            _ => {}
        }
        if op == SEND {
            res.max(0) as u64
        } else {
            0
        }
    }

    /// Shut every socket down and reap until the kernel holds nothing of ours: the bytes
    /// of the sends reaped here (done before the shutdown: epoll counts a send's bytes as
    /// its `write` takes them, and a timed test ends without waiting for its last sends).
    fn release<P>(&mut self, conns: &mut [Conn<P>]) -> u64 {
        let mut sent = 0;
        for c in conns.iter_mut() {
            if let Some(s) = c.stream.as_ref() {
                // SAFETY: a valid socket.
                unsafe { libc::shutdown(s.as_raw_fd(), libc::SHUT_RDWR) };
            }
        }
        // Completions an error left unread first.
        for cqe in std::mem::take(&mut self.cqes) {
            sent += self.retire(cqe.user_data(), cqe.result(), cqe.flags());
        }
        let until = Instant::now() + RELEASE_WAIT;
        while self.holding() && Instant::now() < until {
            if self.wait(Some(Duration::from_millis(50))).is_err() {
                break;
            }
            let cqes = std::mem::take(&mut self.cqes);
            for cqe in &cqes {
                sent += self.retire(cqe.user_data(), cqe.result(), cqe.flags());
            }
            self.cqes = cqes;
            self.cqes.clear();
            if let Some(b) = self.bufs.as_mut() {
                b.publish();
            }
        }
        sent
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // The ring first: closing it cancels what is left (its registered index holds a
        // reference to it too, so that goes first). Memory the kernel may still hold is
        // leaked rather than freed under it.
        let holding = self.holding();
        if let (Some(ring), Some(index)) = (self.ring.as_ref(), self.index) {
            unregister_ring_fd(ring, index);
        }
        drop(self.ring.take());
        if holding {
            std::mem::forget(self.bufs.take());
            for s in &mut self.slots {
                std::mem::forget(std::mem::take(&mut s.sending));
            }
            for (_, b) in self.orphans.drain(..) {
                std::mem::forget(b);
            }
        }
    }
}

/// Send `buf` from `from` on the socket at `slot` in the ring's file table.
fn send_entry(slot: usize, buf: &[u8], from: usize, data: u64) -> squeue::Entry {
    let rest = &buf[from..];
    opcode::Send::new(
        Fixed(slot as u32),
        rest.as_ptr(),
        rest.len().min(u32::MAX as usize) as u32,
    )
    .build()
    .user_data(data)
}

/// The closed loop on the ring: every connection's receive armed and its pipeline sent,
/// then per round one `io_uring_enter` that submits the sends and reaps the replies.
pub(super) fn closed_loop<P: Protocol>(
    lp: &mut Loop<'_>,
    mut ring: Ring,
    conns: &mut [Conn<P>],
) -> anyhow::Result<()> {
    let run = run_ring(lp, &mut ring, conns);
    lp.rec.bytes_tx += ring.release(conns);
    run
}

fn run_ring<P: Protocol>(
    lp: &mut Loop<'_>,
    ring: &mut Ring,
    conns: &mut [Conn<P>],
) -> anyhow::Result<()> {
    for (slot, c) in conns.iter_mut().enumerate() {
        ring.arm_recv(slot, c)?;
        lp.top_up(c, lp.pace.now());
        ring.flush(slot, c)?;
    }
    ring.arm_tick(lp.pace.wait_at_most(lp.pace.now(), TICK_MAX))?;
    let mut progress_pending: u64 = 0;
    // One clock reading per round: taken after the wait, it times the reap's replies and
    // its new requests, and the next round's stop condition (a reap later).
    let mut done = lp.pace.now();
    while lp.round(conns, done) {
        if done >= lp.pace.next_ckpt_ns {
            lp.checkpoint(done, None);
        }
        ring.wait(None)?;
        let cqes = std::mem::take(&mut ring.cqes);
        // One time for the whole reap: its receives ran in this thread's one
        // io_uring_enter (deferred task work), and its new requests leave in the next.
        done = lp.pace.now();
        let mut replies = 0u64;
        for (i, cqe) in cqes.iter().enumerate() {
            if let Err(e) = on_completion(lp, ring, conns, cqe, done, &mut replies) {
                // What this reap did not get to is given back at the end (`release`).
                ring.cqes = cqes[i + 1..].to_vec();
                return Err(e.into());
            }
        }
        ring.cqes = cqes;
        ring.cqes.clear();
        if let Some(b) = ring.bufs.as_mut() {
            b.publish();
        }
        progress_pending += replies;
        lp.report_progress(&mut progress_pending, replies == 0);
    }
    lp.progress
        .done
        .fetch_add(progress_pending, Ordering::Relaxed);
    Ok(())
}

/// Take one completion: the round's timer, a send's (the rest of a short one, the next
/// batch), or a receive's (its replies parsed and recorded, the connection reopened or
/// topped up).
fn on_completion<P: Protocol>(
    lp: &mut Loop<'_>,
    ring: &mut Ring,
    conns: &mut [Conn<P>],
    cqe: &cqueue::Entry,
    done: u64,
    replies: &mut u64,
) -> io::Result<()> {
    let (data, res, flags) = (cqe.user_data(), cqe.result(), cqe.flags());
    if data == TICK {
        return ring.arm_tick(lp.pace.wait_at_most(done, TICK_MAX));
    }
    let (slot, gen, op) = untag(data);
    let live = conns
        .get(slot)
        .is_some_and(|c| !c.dead && c.stream.is_some())
        && ring.slots[slot].gen == gen;
    if !live {
        // A socket since replaced: what its sends sent still went out.
        lp.rec.bytes_tx += ring.retire(data, res, flags);
        return Ok(());
    }
    let c = &mut conns[slot];
    if op == CONNECT {
        return match lp.connect_done(c) {
            Connect::Pending => ring.arm_connect(slot, c),
            Connect::Failed => Ok(()),
            Connect::Closed(Next::Reopen) => ring.reopen(lp, slot, c),
            Connect::Closed(_) => {
                ring.close_conn(slot, c);
                Ok(())
            }
            Connect::Open => {
                ring.arm_recv(slot, c)?;
                lp.top_up(c, lp.pace.now());
                ring.flush(slot, c)
            }
        };
    }
    if op == SEND {
        let s = &mut ring.slots[slot];
        if res > 0 {
            s.sent += res as usize;
            lp.rec.bytes_tx += res as u64;
        }
        let again = res > 0 || matches!(-res, libc::EAGAIN | libc::EINTR | libc::ENOBUFS);
        if again && s.sent < s.sending.len() {
            // A short send, or one the kernel could not make now: the rest, from where
            // it stopped (the requests in it are in flight: they must go out).
            let e = send_entry(slot, &s.sending, s.sent, data);
            return ring.push(e);
        }
        // Done, or failed: the receive sees the failure and handles it.
        s.sending.clear();
        s.send_busy = false;
        return ring.flush(slot, c);
    }
    let more = cqueue::more(flags);
    let read = if res > 0 {
        let len = res as usize;
        lp.rec.bytes_rx += len as u64;
        match (cqueue::buffer_select(flags), ring.bufs.as_mut()) {
            (Some(bid), Some(b)) => {
                let bytes = b.bytes(bid, len);
                let read = if c.rbuf.is_empty() {
                    // Parsed where the kernel put it; only an incomplete reply's start
                    // is kept (most replies come whole: no copy).
                    parse_from(
                        &mut c.proto,
                        &mut c.inflight,
                        bytes,
                        &mut lp.rec,
                        done,
                        lp.pace.window(),
                    )
                    .map(|(n, used)| {
                        c.rbuf.extend_from_slice(&bytes[used..]);
                        n
                    })
                } else {
                    c.make_room(len, len.max(READ_CHUNK));
                    c.rbuf.extend_from_slice(bytes);
                    parse_replies(c, &mut lp.rec, done, lp.pace.window())
                };
                b.give(bid);
                read
            }
            _ => Err("io_uring receive without a buffer".to_string()),
        }
    } else if res == 0 {
        Err(CLOSED.to_string())
    } else if matches!(-res, libc::ENOBUFS | libc::EINTR | libc::EAGAIN) {
        #[cfg(test)]
        if -res == libc::ENOBUFS {
            OUT_OF_BUFFERS.fetch_add(1, Ordering::Relaxed);
        }
        // Out of buffers (they are given back after this reap) or interrupted: armed
        // again below.
        Ok(0)
    } else {
        Err(io::Error::from_raw_os_error(-res).to_string())
    };
    if !more {
        ring.slots[slot].recv_armed = false;
    }
    let (n, next) = lp.settle(c, read);
    *replies += n;
    match next {
        // The new requests leave once the connect is done (its completion).
        Next::Reopen => return ring.reopen(lp, slot, c),
        Next::Retire => {
            ring.close_conn(slot, c);
            return Ok(());
        }
        Next::Keep if !more && c.stream.is_some() => ring.arm_recv(slot, c)?,
        Next::Keep => {}
    }
    lp.top_up(c, done);
    ring.flush(slot, c)
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader, Write};
    use std::net::TcpListener;

    use rand::rngs::SmallRng;

    use super::OUT_OF_BUFFERS;
    use crate::load::{ClientIo, LoadSpec, Outcome, Protocol, StopAfter};
    use crate::workload::Progress;

    /// `x\n` answered by `len` bytes: `k`s and a newline.
    struct Long(usize);
    impl Protocol for Long {
        fn encode(&mut self, _rng: &mut SmallRng, out: &mut Vec<u8>) -> usize {
            out.extend_from_slice(b"x\n");
            0
        }
        fn parse(&mut self, buf: &[u8]) -> Result<Option<(usize, Outcome)>, String> {
            match buf.iter().position(|&b| b == b'\n') {
                Some(i) if i + 1 == self.0 && buf[..i].iter().all(|&b| b == b'k') => {
                    Ok(Some((i + 1, Outcome::Ok)))
                }
                Some(i) => Err(format!("a reply of {} bytes, not {}", i + 1, self.0)),
                None => Ok(None),
            }
        }
    }

    /// More data at once than the ring has buffers (64 here): receives end with ENOBUFS
    /// and are armed again, and every reply still arrives whole and in order.
    #[test]
    fn receives_out_of_buffers_are_armed_again_and_lose_nothing() {
        const LEN: usize = 100_000;
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            let mut reply = vec![b'k'; LEN];
            reply[LEN - 1] = b'\n';
            let reply: &'static [u8] = reply.leak();
            for conn in l.incoming() {
                let Ok(conn) = conn else { break };
                std::thread::spawn(move || {
                    let mut w = conn.try_clone().unwrap();
                    let mut r = BufReader::new(conn);
                    let mut line = String::new();
                    while r.read_line(&mut line).unwrap_or(0) > 0 {
                        line.clear();
                        if w.write_all(reply).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        let spec = LoadSpec {
            stop: StopAfter::Requests(1_000),
            connections: 40,
            pipeline: 4,
            client_io: ClientIo::IoUring,
            ..LoadSpec::default()
        };
        let before = OUT_OF_BUFFERS.load(std::sync::atomic::Ordering::Relaxed);
        let out =
            super::super::run(&spec, &[addr], &["x"], |_| Long(LEN), &Progress::default()).unwrap();
        assert_eq!(out.total_count(), 1_000);
        assert_eq!(out.classes[0].ok, 1_000);
        assert_eq!(out.bytes_rx, 1_000 * LEN as u64);
        assert!(
            out.connection_errors.is_empty(),
            "{:?}",
            out.connection_errors
        );
        let ran_out = OUT_OF_BUFFERS.load(std::sync::atomic::Ordering::Relaxed) - before;
        assert!(ran_out > 0, "the test never ran the ring out of buffers");
    }
}
