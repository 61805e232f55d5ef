//! The sender's view of its TCP streams from the kernel (`TCP_INFO`), the source of
//! iperf3's Retr, Cwnd and RTT columns: read at each interval the receiver reports and at
//! the end, from the control thread, never on the sending path.

use std::net::TcpStream;
use std::os::fd::AsRawFd;

/// One stream's counters at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sample {
    /// Segments retransmitted since the connection opened (`tcpi_total_retrans`).
    pub total_retrans: u32,
    /// Smoothed round-trip time, microseconds (`tcpi_rtt`).
    pub rtt_us: u32,
    /// Congestion window in bytes (`tcpi_snd_cwnd` segments of `tcpi_snd_mss`).
    pub snd_cwnd_bytes: u64,
}

/// Read a socket's `TCP_INFO`.
pub fn sample(s: &TcpStream) -> std::io::Result<Sample> {
    // SAFETY: tcp_info is plain data; the kernel writes at most `len` bytes of it.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: getsockopt into a buffer of `len` bytes on a socket the caller owns.
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(Sample {
        total_retrans: info.tcpi_total_retrans,
        rtt_us: info.tcpi_rtt,
        snd_cwnd_bytes: u64::from(info.tcpi_snd_cwnd) * u64::from(info.tcpi_snd_mss),
    })
}

/// What the sender's kernel said about its streams over a test.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TcpStats {
    /// Segments retransmitted during the test, all streams (iperf3's Retr).
    pub retransmits: u64,
    /// Mean of the smoothed RTT read at each interval, all streams (iperf3's mean_rtt).
    pub rtt_mean_us: f64,
    /// Lowest smoothed RTT read (iperf3's min_rtt: the least of the readings its mean
    /// and max are of, not the kernel's tcpi_min_rtt, the least raw sample over minutes,
    /// 17x lower on loopback); None when no reading was taken.
    pub rtt_min_us: Option<u32>,
    /// Highest smoothed RTT read (iperf3's max_rtt).
    pub rtt_max_us: u32,
    /// Largest congestion window read (iperf3's max_snd_cwnd), bytes.
    pub snd_cwnd_max_bytes: u64,
}

/// Reads the streams' counters interval by interval.
pub struct Tracker {
    socks: Vec<TcpStream>,
    base: Vec<u32>,
    last: Vec<u32>,
    rtt_sum: f64,
    rtt_n: u64,
    min_rtt: Option<u32>,
    max_rtt: u32,
    cwnd_max: u64,
    error: Option<String>,
}

impl Tracker {
    /// Start from the counters as they are now (a retransmitted SYN is not the test's).
    pub fn new(socks: Vec<TcpStream>) -> Tracker {
        let mut t = Tracker {
            base: vec![0; socks.len()],
            last: vec![0; socks.len()],
            socks,
            rtt_sum: 0.0,
            rtt_n: 0,
            min_rtt: None,
            max_rtt: 0,
            cwnd_max: 0,
            error: None,
        };
        for i in 0..t.socks.len() {
            match sample(&t.socks[i]) {
                Ok(s) => {
                    t.base[i] = s.total_retrans;
                    t.last[i] = s.total_retrans;
                }
                Err(e) => t.error = Some(format!("reading TCP_INFO: {e}")),
            }
        }
        t
    }

    /// Segments retransmitted since the last call, all streams; the RTT and window are
    /// kept for the end. None once a read has failed.
    pub fn interval(&mut self) -> Option<u64> {
        if self.error.is_some() {
            return None;
        }
        let mut retrans = 0u64;
        for i in 0..self.socks.len() {
            let s = match sample(&self.socks[i]) {
                Ok(s) => s,
                Err(e) => {
                    self.error = Some(format!("reading TCP_INFO: {e}"));
                    return None;
                }
            };
            retrans += u64::from(s.total_retrans.wrapping_sub(self.last[i]));
            self.last[i] = s.total_retrans;
            self.note(&s);
        }
        Some(retrans)
    }

    /// One reading's RTT and window, into the test's mean, minimum and maximum (all
    /// three of the smoothed RTTs read, as iperf3 takes them).
    fn note(&mut self, s: &Sample) {
        self.rtt_sum += f64::from(s.rtt_us);
        self.rtt_n += 1;
        self.max_rtt = self.max_rtt.max(s.rtt_us);
        self.min_rtt = Some(self.min_rtt.map_or(s.rtt_us, |x| x.min(s.rtt_us)));
        self.cwnd_max = self.cwnd_max.max(s.snd_cwnd_bytes);
    }

    /// Count from the counters last read on (the end of the warm-up): the retransmits,
    /// RTTs and windows read before it are not the test's.
    pub fn restart(&mut self) {
        self.base.clone_from(&self.last);
        self.rtt_sum = 0.0;
        self.rtt_n = 0;
        self.min_rtt = None;
        self.max_rtt = 0;
        self.cwnd_max = 0;
    }

    /// The test's figures, read once more now; the reason when they cannot be had.
    pub fn finish(mut self) -> Result<TcpStats, String> {
        self.interval();
        if let Some(e) = self.error {
            return Err(e);
        }
        Ok(TcpStats {
            retransmits: self
                .last
                .iter()
                .zip(&self.base)
                .map(|(l, b)| u64::from(l.wrapping_sub(*b)))
                .sum(),
            rtt_mean_us: self.rtt_sum / self.rtt_n.max(1) as f64,
            rtt_min_us: self.min_rtt,
            rtt_max_us: self.max_rtt,
            snd_cwnd_max_bytes: self.cwnd_max,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The minimum is the least smoothed RTT read, as iperf3's min_rtt (the kernel's
    /// tcpi_min_rtt, the least raw sample, read 17x below the mean on loopback).
    #[test]
    fn the_rtt_figures_are_of_the_smoothed_rtts_read() {
        let mut t = Tracker::new(Vec::new());
        for rtt_us in [80, 50, 65] {
            t.note(&Sample {
                rtt_us,
                snd_cwnd_bytes: 1000,
                ..Sample::default()
            });
        }
        let s = t.finish().unwrap();
        assert_eq!((s.rtt_min_us, s.rtt_max_us), (Some(50), 80));
        assert!((s.rtt_mean_us - 65.0).abs() < 1e-9, "{}", s.rtt_mean_us);
    }
}
