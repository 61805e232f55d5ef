//! The agent protocol: what the controller and `rackbench agent` say to each other on
//! the ssh session's stdin and stdout (the agent logs on stderr).
//!
//! After an optional banner of noise (a login shell may print), the agent writes
//! [`MAGIC`], then frames: a 4-byte big-endian length and that many bytes of JSON. The
//! first frame is the agent's [`Hello`]; every later frame is an [`Envelope`] (a request
//! from the controller, a reply from the agent, matched by `id`, or a drive's checkpoint
//! under the drive's `id` while it runs). A controller refuses an
//! agent whose protocol version or binary differs from its own: the two ends of a frame
//! must be the same code.

use std::collections::{BTreeMap, VecDeque};
use std::io::{Read, Write};

use anyhow::{bail, Context};
use engine::host::{DriverJob, TelemetrySettings};
use engine::workload::Params;
use model::TelemetrySample;
use serde::{Deserialize, Serialize};

/// Bumped on any change to the frames or messages.
pub const PROTOCOL_VERSION: u32 = 5;

/// Written by the agent before its first frame; anything before it is skipped.
pub const MAGIC: &[u8] = b"\x00RACKBENCH-AGENT\x00";

/// Largest frame accepted (a test's histograms are well under a megabyte).
pub const MAX_FRAME: usize = 256 << 20;

/// Most bytes of samples in one reply of a telemetry take. A long test's samples (a
/// sample a second, tens of kilobytes each on a large host) outgrow [`MAX_FRAME`], and
/// one big reply would hold the agent's output for as long as it takes to write, the
/// heartbeats' answers waiting behind it until both ends take the host for lost. So a
/// take comes back in chunks of about this size, each written in well under a second.
pub const TAKE_CHUNK_BYTES: usize = 4 << 20;

/// The agent introduces itself.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Hello {
    pub protocol: u32,
    pub version: String,
    /// sha256 of the agent's binary.
    pub binary_sha256: String,
    pub arch: String,
    pub kernel: String,
    pub hostname: String,
    pub pid: u32,
    /// How many CPUs the host has online (sysconf, not the agent's own affinity: a
    /// server or a driver may be pinned to any of them). Kept for a controller that
    /// reads only this; [`Hello::online`] says which they are.
    pub cpus: usize,
    /// The CPUs online on the host, from the kernel's list (`0-1,3`: a CPU offline in
    /// the middle is a hole a count cannot show), or counted with the reason the list
    /// could not be read: what a CPU list given for the host is checked against before
    /// a run. Added after `cpus`; absent from an agent that predates it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub online: Option<engine::launch::OnlineCpus>,
    /// This host's address as the controller reached it (from SSH_CONNECTION).
    pub address: Option<String>,
    /// The controller's address as this host saw it.
    pub peer_address: Option<String>,
    /// Every address of this host's interfaces: a `--target` is checked against the
    /// system under test's. Absent from an agent that predates it (not checked).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<std::net::IpAddr>,
    /// The kernel's boot id (`/proc/sys/kernel/random/boot_id`): with a shared interface
    /// address, two names of one machine ([`crate::same_machine`]). Absent from an agent
    /// that predates it, or where it cannot be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_id: Option<String>,
    /// Servers rackbench can launch here: name -> path (None: not installed).
    pub servers: BTreeMap<String, Option<String>>,
    /// The agent's binary as the kernel names it (`/proc/self/exe`, links resolved):
    /// what a kill by pid checks the process still runs. Absent from an agent that
    /// predates it, or where it cannot be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exe: Option<String>,
}

impl Hello {
    /// The CPUs the host has online: its list, or, from an agent that sent only the
    /// count, 0 to `cpus`-1 with a note that they were counted.
    pub fn online_cpus(&self) -> engine::launch::OnlineCpus {
        self.online.clone().unwrap_or_else(|| {
            engine::launch::OnlineCpus::counted(
                self.cpus,
                "the agent sent only its count of CPUs online",
            )
        })
    }
}

/// A request from the controller. Its Debug hides the passwords its parameters may
/// carry (a `--dsn`'s, a run's own).
#[derive(Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// Heartbeat and clock probe: the agent answers with its clock.
    Ping,
    Disclosure {
        role: String,
    },
    StartService {
        workload: String,
        params: Params,
    },
    /// What the sweep point would refuse here before launching (see
    /// [`engine::host::Host::check_launch`]).
    CheckLaunch {
        workload: String,
        params: Params,
    },
    ServiceQuery {
        id: u64,
        what: String,
    },
    ServiceExited {
        id: u64,
    },
    StopService {
        id: u64,
    },
    /// Run a driver job from `start_at_unix_s` on the agent's own clock. `checkpoints`:
    /// send its load's checkpoints while it runs, each an [`Envelope::checkpoint`] under
    /// this request's id (absent from an older controller: none).
    Drive {
        job: DriverJob,
        start_at_unix_s: f64,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        checkpoints: bool,
    },
    Interrupt,
    TelemetryStart {
        settings: TelemetrySettings,
    },
    /// Close the current interval and set aside every sample since the last take; the
    /// reply is the first [`TakeChunk`] of them.
    TelemetryTake,
    /// The next [`TakeChunk`] of the take under way.
    TelemetryTakeMore,
    /// When the samples' clock began, on the agent's wall clock as it reads now.
    TelemetryClock,
    TelemetryMark,
    TelemetrySince {
        mark: u64,
    },
    SetWarmup {
        on: bool,
    },
    UnwatchServers,
    MeasureIdle {
        secs: f64,
    },
    /// A variant's setup or teardown commands (they travel in the frame, never on a
    /// remote command line).
    RunCommands {
        commands: Vec<String>,
        /// A setup's commands end at the agent's stop (the controller's Ctrl-C).
        purpose: engine::host::CommandsFor,
    },
    /// Stop everything and exit.
    Shutdown,
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        model::secrets::Redacted(self).fmt(f)
    }
}

/// One reply of a telemetry take: some of its samples, oldest first, and how many are
/// still to come ([`Request::TelemetryTakeMore`] until none).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TakeChunk {
    pub samples: Vec<TelemetrySample>,
    pub remaining: usize,
}

/// The next chunk of `queue`: samples from its front while their JSON stays within
/// `max_bytes`, and always at least one (a chunk that carried none would never end the
/// take).
pub fn next_chunk(
    queue: &mut VecDeque<TelemetrySample>,
    max_bytes: usize,
) -> anyhow::Result<TakeChunk> {
    let mut samples = Vec::new();
    let mut bytes = 0usize;
    while let Some(s) = queue.front() {
        let size = serde_json::to_vec(s)?.len() + 1;
        if !samples.is_empty() && bytes + size > max_bytes {
            break;
        }
        bytes += size;
        samples.extend(queue.pop_front());
    }
    Ok(TakeChunk {
        samples,
        remaining: queue.len(),
    })
}

/// One frame after the hello: a request (controller to agent) or a reply.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Envelope {
    pub id: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<Request>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ok: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub err: Option<String>,
    /// A checkpoint of the drive under way with this `id`: what its load measured so
    /// far, in the form of its final report (a load loop's [`engine::wire::WireOutcome`],
    /// `net`'s sender report). Not a reply: the drive's own reply comes after its last
    /// one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<serde_json::Value>,
}

impl Envelope {
    pub fn request(id: u64, r: Request) -> Self {
        Envelope {
            id,
            request: Some(r),
            ok: None,
            err: None,
            checkpoint: None,
        }
    }

    /// A checkpoint of drive `id` (see [`Envelope::checkpoint`]).
    pub fn checkpoint(id: u64, so_far: serde_json::Value) -> Self {
        Envelope {
            id,
            request: None,
            ok: None,
            err: None,
            checkpoint: Some(so_far),
        }
    }
    pub fn reply(id: u64, r: anyhow::Result<serde_json::Value>) -> Self {
        match r {
            Ok(v) => Envelope {
                id,
                request: None,
                ok: Some(v),
                err: None,
                checkpoint: None,
            },
            Err(e) => Envelope {
                id,
                request: None,
                ok: None,
                err: Some(format!("{e:#}")),
                checkpoint: None,
            },
        }
    }
}

/// One frame's body, or an error when it is larger than [`MAX_FRAME`] (nothing written:
/// the stream stays usable, and the sender can say so instead).
pub fn frame_body<T: Serialize>(msg: &T) -> anyhow::Result<Vec<u8>> {
    let body = serde_json::to_vec(msg)?;
    if body.len() > MAX_FRAME {
        bail!("a frame of {} bytes is larger than {MAX_FRAME}", body.len());
    }
    Ok(body)
}

/// Write one frame body ([`frame_body`]).
pub fn write_body<W: Write>(w: &mut W, body: &[u8]) -> anyhow::Result<()> {
    w.write_all(&(body.len() as u32).to_be_bytes())?;
    w.write_all(body)?;
    w.flush()?;
    Ok(())
}

/// Write one frame.
pub fn write_frame<W: Write, T: Serialize>(w: &mut W, msg: &T) -> anyhow::Result<()> {
    write_body(w, &frame_body(msg)?)
}

/// Read one frame; Ok(None) at a clean end of stream (between frames).
pub fn read_frame<R: Read, T: for<'de> Deserialize<'de>>(r: &mut R) -> anyhow::Result<Option<T>> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_FRAME {
        bail!("a frame of {len} bytes announced: not a rackbench agent stream?");
    }
    // Grown as bytes arrive, not sized from the announced length: a stream announcing
    // 256 MiB and ending after four bytes costs four bytes.
    let mut body = Vec::new();
    r.take(len as u64)
        .read_to_end(&mut body)
        .context("reading a frame")?;
    if body.len() < len {
        bail!("the stream ended inside a frame");
    }
    Ok(Some(
        serde_json::from_slice(&body).context("a frame is not valid JSON of the protocol")?,
    ))
}

/// Skip everything up to and including [`MAGIC`] (a login shell's noise), keeping at most
/// `limit` bytes of it for an error message.
pub fn skip_to_magic<R: Read>(r: &mut R, limit: usize) -> anyhow::Result<()> {
    let mut seen: Vec<u8> = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        // What was printed, shown safe for a terminal and short.
        let excerpt = |seen: &[u8]| {
            let text = String::from_utf8_lossy(seen);
            let text = text.trim();
            let cut: String = text.chars().take(200).collect();
            let more = if cut.len() < text.len() { "..." } else { "" };
            model::printable(&format!("{cut}{more}"))
        };
        if r.read(&mut byte)? == 0 {
            let noise = excerpt(&seen);
            bail!(
                "the agent ended before it started{}",
                if noise.is_empty() {
                    String::new()
                } else {
                    format!(" (its output: {noise})")
                }
            );
        }
        seen.push(byte[0]);
        if seen.ends_with(MAGIC) {
            return Ok(());
        }
        if seen.len() > limit {
            bail!(
                "no rackbench agent answered: the remote side printed {} bytes of something \
                 else, beginning \"{}\". A shell startup file that prints this much for a \
                 remote command (bash's ~/.bashrc, zsh's ~/.zshenv, fish's config.fish, \
                 tcsh's ~/.tcshrc) should print only when interactive; else check what runs \
                 at the cached path",
                seen.len(),
                excerpt(&seen)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fuzz_regression_announced_length_is_not_preallocated() {
        // A frame header announcing MAX_FRAME bytes allocated them before reading any.
        let mut stream: &[u8] = &[0x10, 0, 0, 0, b'{'];
        let err = read_frame::<_, Envelope>(&mut stream).unwrap_err();
        assert!(
            format!("{err:#}").contains("ended inside a frame"),
            "{err:#}"
        );
    }

    #[test]
    fn frames_round_trip_after_noise() {
        let mut buf: Vec<u8> = b"Welcome!\nlast login...\n".to_vec();
        buf.extend_from_slice(MAGIC);
        write_frame(
            &mut buf,
            &Envelope::request(7, Request::SetWarmup { on: true }),
        )
        .unwrap();
        write_frame(&mut buf, &Envelope::reply(7, Ok(serde_json::json!(3)))).unwrap();
        let mut r = &buf[..];
        skip_to_magic(&mut r, 4096).unwrap();
        let a: Envelope = read_frame(&mut r).unwrap().unwrap();
        assert_eq!(a.id, 7);
        assert!(matches!(a.request, Some(Request::SetWarmup { on: true })));
        let b: Envelope = read_frame(&mut r).unwrap().unwrap();
        assert_eq!(b.ok, Some(serde_json::json!(3)));
        assert!(read_frame::<_, Envelope>(&mut r).unwrap().is_none());
    }

    #[test]
    fn a_huge_length_is_refused_not_allocated() {
        let buf = [0xffu8, 0xff, 0xff, 0xff, b'{'];
        let e = read_frame::<_, Envelope>(&mut &buf[..]).unwrap_err();
        assert!(format!("{e}").contains("not a rackbench agent stream"));
    }

    #[test]
    fn no_magic_is_a_clear_error() {
        let e = skip_to_magic(&mut &b"bash: rackbench: command not found\n"[..], 4096).unwrap_err();
        assert!(format!("{e}").contains("command not found"), "{e}");
        // Too much of something else: its beginning, safe for a terminal, and what to do.
        let noise = format!("\x1b[31mWelcome{}", " to the lab".repeat(100));
        let e = skip_to_magic(&mut noise.as_bytes(), 64)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("beginning \"\\u{1b}[31mWelcome to the lab"),
            "{e}"
        );
        assert!(e.contains("print only when interactive"), "{e}");
        assert!(!e.contains('\x1b'), "{e}");
    }

    /// A sample of a large host: `cpus` CPU lines, at `t_s`.
    fn big_sample(t_s: f64, cpus: usize) -> TelemetrySample {
        TelemetrySample {
            t_s,
            interval_s: 1.0,
            cpus: (0..cpus as i32).map(model::CpuUtil::idle).collect(),
            ..TelemetrySample::default()
        }
    }

    /// A take larger than one chunk comes back in chunks, each a frame within the chunk
    /// size (and so far from MAX_FRAME, however long the test), in order, none lost, each
    /// carrying at least one sample.
    #[test]
    fn a_take_comes_in_bounded_chunks_in_order() {
        let mut q: VecDeque<TelemetrySample> = (0..200).map(|i| big_sample(i as f64, 64)).collect();
        let one = serde_json::to_vec(&q[0]).unwrap().len();
        let max = 10 * one + 5;
        let mut got = Vec::new();
        loop {
            let chunk = next_chunk(&mut q, max).unwrap();
            assert!(!chunk.samples.is_empty());
            let reply = Envelope::reply(1, Ok(serde_json::to_value(&chunk).unwrap()));
            // The frame carries the samples and a few bytes of envelope.
            assert!(frame_body(&reply).unwrap().len() < max + 200);
            assert_eq!(chunk.remaining, q.len());
            got.extend(chunk.samples);
            if chunk.remaining == 0 {
                break;
            }
        }
        assert_eq!(got.len(), 200);
        assert!(got.windows(2).all(|w| w[0].t_s < w[1].t_s));
        // A sample larger than a chunk still goes, alone.
        let mut q: VecDeque<TelemetrySample> = vec![big_sample(0.0, 64), big_sample(1.0, 1)].into();
        let c = next_chunk(&mut q, 10).unwrap();
        assert_eq!((c.samples.len(), c.remaining), (1, 1));
        // Nothing to take: an empty chunk, nothing remaining.
        let c = next_chunk(&mut VecDeque::new(), 10).unwrap();
        assert!(c.samples.is_empty() && c.remaining == 0);
    }

    /// The hello carried only a count of CPUs, and a host with CPU 2 offline (online
    /// `0-1,3`) was judged to have CPUs 0-2. It carries the kernel's list now, in a field
    /// an older controller skips and an older agent's hello goes without: the count is
    /// then used, with a note saying so.
    #[test]
    fn the_hello_carries_the_online_cpu_list_and_an_older_one_still_reads() {
        let mut hello = crate::agent::hello(Default::default()).unwrap();
        assert_eq!(hello.online, Some(engine::launch::cpus_online_here()));
        hello.cpus = 3;
        hello.online = Some(engine::launch::OnlineCpus::listed(vec![0, 1, 3]));
        let mut buf = Vec::new();
        write_frame(&mut buf, &hello).unwrap();
        let back: Hello = read_frame(&mut &buf[..]).unwrap().unwrap();
        assert_eq!(back.online_cpus().cpus, vec![0, 1, 3]);
        assert_eq!(back.online_cpus().note(), None);

        // An older agent's hello: no `online`.
        let mut old = serde_json::to_value(&hello).unwrap();
        old.as_object_mut().unwrap().remove("online");
        let old: Hello = serde_json::from_value(old).unwrap();
        let online = old.online_cpus();
        assert_eq!(online.cpus, vec![0, 1, 2]);
        assert!(
            online
                .note()
                .unwrap()
                .contains("the agent sent only its count"),
            "{online:?}"
        );
        // And what an older controller reads of a new hello: the fields it knows.
        #[derive(Deserialize)]
        struct OldHello {
            cpus: usize,
        }
        let v = serde_json::to_value(&hello).unwrap();
        assert_eq!(serde_json::from_value::<OldHello>(v).unwrap().cpus, 3);
    }

    /// A drive's checkpoint is a frame of its own under the drive's id, told from its
    /// reply; a drive asks for checkpoints in a field an older controller's request goes
    /// without (none sent), and the frames of before read as they did.
    #[test]
    fn a_checkpoint_frame_is_not_a_reply_and_older_frames_are_unchanged() {
        let so_far = serde_json::json!({"duration_s": 5.0});
        let mut buf = Vec::new();
        write_frame(&mut buf, &Envelope::checkpoint(9, so_far.clone())).unwrap();
        write_frame(&mut buf, &Envelope::reply(9, Ok(serde_json::json!(1)))).unwrap();
        let mut r = &buf[..];
        let c: Envelope = read_frame(&mut r).unwrap().unwrap();
        assert_eq!(
            (c.id, c.checkpoint, c.ok, c.err),
            (9, Some(so_far), None, None)
        );
        let reply: Envelope = read_frame(&mut r).unwrap().unwrap();
        assert!(reply.checkpoint.is_none() && reply.ok.is_some());
        // A reply is written as before: no `checkpoint` key.
        let text = serde_json::to_string(&Envelope::reply(1, Ok(serde_json::json!(0)))).unwrap();
        assert_eq!(text, r#"{"id":1,"ok":0}"#);
        // A drive without the field asks for none; one that asks says so.
        let job = serde_json::json!({"workload": "kv", "test": "set", "params": {},
            "endpoints": [], "index": 0, "generators": 1});
        let old = serde_json::json!({"op": "drive", "job": job, "start_at_unix_s": 1.0});
        match serde_json::from_value::<Request>(old).unwrap() {
            Request::Drive { checkpoints, .. } => assert!(!checkpoints),
            other => panic!("{other:?}"),
        }
        let asks = serde_json::to_value(Request::Drive {
            job: serde_json::from_value(job).unwrap(),
            start_at_unix_s: 1.0,
            checkpoints: true,
        })
        .unwrap();
        assert_eq!(asks["checkpoints"], true);
    }

    #[test]
    fn a_frame_too_large_is_refused_before_anything_is_written() {
        let big = "x".repeat(MAX_FRAME + 1);
        let mut out: Vec<u8> = Vec::new();
        assert!(write_frame(&mut out, &big).is_err());
        assert!(out.is_empty());
    }
}
