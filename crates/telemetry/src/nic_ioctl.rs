//! A NIC's firmware, channels and rings read in-process with the `SIOCETHTOOL` requests
//! `ethtool -i`, `-l` and `-g` make. The kernel gives the same answer either way; asked
//! here, a run spends no process on each (about 1 ms of CPU apiece, which a short run
//! pays whole before it measures). Coalescing and offloads still come from `ethtool`
//! itself: its `n/a` for a coalescing parameter the driver lacks, and its legacy offload
//! names, are not in what these requests return.
//!
//! What each returns is formatted as `ethtool` prints it: a count whose maximum is 0 is
//! `n/a` (the kernel reports neither then, and ethtool says `n/a`).

use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};

const SIOCETHTOOL: libc::c_ulong = 0x8946;
const ETHTOOL_GDRVINFO: u32 = 0x03;
const ETHTOOL_GRINGPARAM: u32 = 0x10;
const ETHTOOL_GCHANNELS: u32 = 0x3c;

/// `struct ethtool_drvinfo` (linux/ethtool.h).
#[repr(C)]
struct DrvInfo {
    cmd: u32,
    driver: [u8; 32],
    version: [u8; 32],
    fw_version: [u8; 32],
    bus_info: [u8; 32],
    erom_version: [u8; 32],
    reserved2: [u8; 12],
    n_priv_flags: u32,
    n_stats: u32,
    testinfo_len: u32,
    eedump_len: u32,
    regdump_len: u32,
}

/// `struct ethtool_channels` and `struct ethtool_ringparam`: a command and eight u32.
#[repr(C)]
struct Eight {
    cmd: u32,
    v: [u32; 8],
}

/// `struct ifreq` with its union as the data pointer (40 bytes on 64-bit Linux).
#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    data: *mut libc::c_void,
    _pad: [u8; 16],
}

/// One interface's ethtool requests over one socket.
pub struct Nic {
    fd: OwnedFd,
    name: [u8; libc::IFNAMSIZ],
}

impl Nic {
    pub fn open(nic: &str) -> std::io::Result<Nic> {
        let bytes = nic.as_bytes();
        if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ || bytes.contains(&0) {
            return Err(std::io::Error::other(format!("bad interface name {nic:?}")));
        }
        let mut name = [0u8; libc::IFNAMSIZ];
        name[..bytes.len()].copy_from_slice(bytes);
        // SAFETY: socket(2) with constant arguments; the result is checked.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: fd is a socket just opened and owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Nic { fd, name })
    }

    /// SIOCETHTOOL with `data` (whose first u32 is the command).
    fn request<T>(&self, data: &mut T) -> std::io::Result<()> {
        let mut ifr = IfReq {
            name: self.name,
            data: (data as *mut T).cast(),
            _pad: [0; 16],
        };
        // SAFETY: ifr names the interface and points at a live struct of the layout the
        // command in its first word asks for; the kernel writes within that struct only.
        let r = unsafe { libc::ioctl(self.fd.as_raw_fd(), SIOCETHTOOL as _, &mut ifr) };
        if r < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// A request whose answer is eight u32 after the command.
    fn eight(&self, cmd: u32) -> std::io::Result<[u32; 8]> {
        let mut e = Eight { cmd, v: [0; 8] };
        self.request(&mut e)?;
        Ok(e.v)
    }

    /// The firmware version (`ethtool -i`'s `firmware-version`); empty when the driver
    /// has none.
    pub fn firmware(&self) -> std::io::Result<String> {
        // SAFETY: all-zero bytes are a valid DrvInfo (integers and byte arrays).
        let mut d: DrvInfo = unsafe { std::mem::zeroed() };
        d.cmd = ETHTOOL_GDRVINFO;
        self.request(&mut d)?;
        let end = d.fw_version.iter().position(|&b| b == 0).unwrap_or(32);
        Ok(String::from_utf8_lossy(&d.fw_version[..end])
            .trim()
            .to_string())
    }

    /// `ethtool -l`'s current settings: `RX n/a TX n/a Combined 4`.
    pub fn channels(&self) -> std::io::Result<String> {
        // max_rx, max_tx, max_other, max_combined, rx, tx, other, combined
        let [max_rx, max_tx, _, max_comb, rx, tx, _, comb] = self.eight(ETHTOOL_GCHANNELS)?;
        Ok(shown(&[
            ("RX", max_rx, rx),
            ("TX", max_tx, tx),
            ("Combined", max_comb, comb),
        ]))
    }

    /// `ethtool -g`'s current settings: `RX 256 TX 256`.
    pub fn rings(&self) -> std::io::Result<String> {
        // rx_max, rx_mini_max, rx_jumbo_max, tx_max, rx, rx_mini, rx_jumbo, tx
        let [max_rx, _, _, max_tx, rx, _, _, tx] = self.eight(ETHTOOL_GRINGPARAM)?;
        Ok(shown(&[("RX", max_rx, rx), ("TX", max_tx, tx)]))
    }
}

/// `name value` pairs as ethtool prints them: `n/a` where the maximum is 0.
fn shown(items: &[(&str, u32, u32)]) -> String {
    items
        .iter()
        .map(|(k, max, cur)| {
            if *max == 0 {
                format!("{k} n/a")
            } else {
                format!("{k} {cur}")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_kernel_does_not_report_is_na() {
        assert_eq!(
            shown(&[("RX", 0, 0), ("TX", 0, 5), ("Combined", 8, 4)]),
            "RX n/a TX n/a Combined 4"
        );
    }

    #[test]
    fn the_structs_have_the_kernels_sizes() {
        assert_eq!(std::mem::size_of::<DrvInfo>(), 196);
        assert_eq!(std::mem::size_of::<Eight>(), 36);
        assert_eq!(std::mem::size_of::<IfReq>(), 40);
    }

    #[test]
    fn bad_names_and_missing_interfaces_are_errors() {
        assert!(Nic::open("").is_err());
        assert!(Nic::open("a-name-far-too-long-for-ifnamsiz").is_err());
        let nic = Nic::open("rb-no-such0").unwrap();
        assert!(nic.channels().is_err());
        assert!(nic.firmware().is_err());
    }
}
