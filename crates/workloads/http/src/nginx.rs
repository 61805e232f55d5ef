//! The nginx rackbench launches by default: its own configuration in a temporary
//! directory (pid, error log and temp paths inside it, access log off, a static file of
//! the chosen size), a free port on the address load generators reach this host at
//! (loopback when everything is local), workers pinned with `worker_cpu_affinity`, run
//! in the foreground (`daemon off; master_process on;`) under a `ChildGuard` so it is
//! gone when the run ends, fails or is interrupted.

use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::Context;
use engine::launch::{free_port_on, pin_command, wait_for_port, ChildGuard};

/// The name of the static file served (request it as `/index.html`).
pub const STATIC_FILE: &str = "index.html";
/// Where nginx's own counters are served (`stub_status`), when the build has the module.
pub const STATUS_PATH: &str = "/rackbench_status";

/// What to launch.
#[derive(Debug, Clone)]
pub struct NginxSpec {
    pub binary: PathBuf,
    pub workers: usize,
    /// Worker i is pinned to cpus[i % len]; the master to all of them. Empty: unpinned.
    pub cpus: Vec<usize>,
    pub file_size: usize,
    /// The address nginx listens on (a free port is chosen there).
    pub bind_ip: IpAddr,
}

/// A running nginx.
pub struct Nginx {
    pub guard: ChildGuard,
    pub addr: SocketAddr,
    /// `nginx/1.22.1`, or None when `nginx -v` said nothing useful.
    pub version: Option<String>,
    pub config: String,
    /// Worker process ids (best effort, from /proc).
    pub workers: Vec<u32>,
    /// Whether [`STATUS_PATH`] serves nginx's counters.
    pub stub_status: bool,
    dir: engine::scratch::ScratchDir,
}

impl Nginx {
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// nginx's own count of requests so far (this status request included), or None
    /// when the build has no `stub_status` or it did not answer.
    pub fn requests_served(&self) -> Option<u64> {
        use std::io::{Read, Write};
        if !self.stub_status {
            return None;
        }
        let mut s =
            std::net::TcpStream::connect_timeout(&self.addr, Duration::from_secs(2)).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
        write!(
            s,
            "GET {STATUS_PATH} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        )
        .ok()?;
        let mut text = String::new();
        s.read_to_string(&mut text).ok()?;
        parse_stub_status(&text)
    }

    /// The last lines of nginx's error log (for error messages).
    pub fn error_log_tail(&self) -> String {
        log_tail(&self.dir.path().join("error.log"))
    }
}

fn log_tail(p: &Path) -> String {
    let text = std::fs::read_to_string(p).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(5)..].join("\n")
}

/// nginx's `worker_cpu_affinity` masks: one per worker, CPU 0 the rightmost digit.
pub fn affinity_masks(workers: usize, cpus: &[usize]) -> Vec<String> {
    if cpus.is_empty() {
        return Vec::new();
    }
    (0..workers)
        .map(|i| {
            let cpu = cpus[i % cpus.len()];
            let mut m = "0".repeat(cpu + 1);
            m.replace_range(0..1, "1");
            m
        })
        .collect()
}

/// The configuration text. `temp_dirs` are the `*_temp_path` directives this build of nginx
/// knows (a directive for a module compiled out is a fatal "unknown directive").
pub fn render_config(
    dir: &Path,
    listen: SocketAddr,
    workers: usize,
    cpus: &[usize],
    temp_dirs: &[&str],
    stub_status: bool,
) -> String {
    let d = dir.display();
    let mut c = String::new();
    let _ = writeln!(
        c,
        "# Written by rackbench for one run; removed when it ends."
    );
    let _ = writeln!(c, "daemon off;\nmaster_process on;");
    let _ = writeln!(c, "worker_processes {workers};");
    let masks = affinity_masks(workers, cpus);
    if !masks.is_empty() {
        let _ = writeln!(c, "worker_cpu_affinity {};", masks.join(" "));
    }
    let _ = writeln!(c, "pid {d}/nginx.pid;\nerror_log {d}/error.log warn;");
    // Enough descriptors for thousands of benchmark connections per worker.
    let _ = writeln!(c, "worker_rlimit_nofile 65536;");
    let _ = writeln!(c, "events {{\n    worker_connections 16384;\n}}");
    let _ = writeln!(c, "http {{");
    let _ = writeln!(c, "    access_log off;");
    for t in temp_dirs {
        let _ = writeln!(c, "    {t}_temp_path {d}/{t}_temp;");
    }
    let _ = writeln!(
        c,
        "    types {{ text/html html; }}\n    default_type application/octet-stream;"
    );
    let _ = writeln!(
        c,
        "    sendfile on;\n    tcp_nopush on;\n    tcp_nodelay on;"
    );
    // nginx closes a keep-alive connection after 1000 requests by default (1.19.10+);
    // a benchmark connection should live as long as the test.
    let _ = writeln!(
        c,
        "    keepalive_requests 100000000;\n    keepalive_timeout 300s;"
    );
    let _ = writeln!(c, "    server {{");
    let _ = writeln!(c, "        listen {listen} backlog=4096;");
    let _ = writeln!(c, "        server_name localhost;\n        root {d}/www;");
    let _ = writeln!(c, "        location / {{ }}");
    if stub_status {
        let _ = writeln!(c, "        location = {STATUS_PATH} {{ stub_status; }}");
    }
    let _ = writeln!(c, "    }}\n}}");
    c
}

/// Which `*_temp_path` directives this nginx accepts, and whether it has `stub_status`
/// (from `nginx -V`).
fn build_features(binary: &Path) -> (Vec<&'static str>, bool) {
    let out = Command::new(binary).arg("-V").output();
    let text = out
        .map(|o| {
            format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            )
        })
        .unwrap_or_default();
    let stub = text.contains("--with-http_stub_status_module");
    let mut v = vec!["client_body"];
    for m in ["proxy", "fastcgi", "uwsgi", "scgi"] {
        if !text.contains(&format!("--without-http_{m}_module")) {
            v.push(m);
        }
    }
    (v, stub)
}

/// Parse `stub_status` output: the `requests` counter (third number of the third line).
pub fn parse_stub_status(text: &str) -> Option<u64> {
    let mut lines = text
        .lines()
        .skip_while(|l| !l.contains("accepts handled requests"));
    lines.next()?;
    lines.next()?.split_whitespace().nth(2)?.parse().ok()
}

/// `nginx/1.22.1` from `nginx -v` (printed on stderr).
pub fn version(binary: &Path) -> Option<String> {
    let o = Command::new(binary).arg("-v").output().ok()?;
    let text = String::from_utf8_lossy(&o.stderr).to_string() + &String::from_utf8_lossy(&o.stdout);
    text.split_whitespace()
        .find(|w| w.starts_with("nginx/"))
        .map(str::to_string)
}

/// A file of `size` bytes: readable text lines, so a human can `curl` it.
fn static_content(size: usize) -> Vec<u8> {
    const LINE: &[u8] = b"rackbench static file: 0123456789abcdefghijklmnopqrstuvwxyz\n";
    LINE.iter().copied().cycle().take(size).collect()
}

/// Worker pids: the master's children (Linux `/proc/PID/task/PID/children`).
fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|s| s.parse().ok())
        .collect()
}

/// Launch nginx and wait until it accepts connections.
pub fn launch(spec: &NginxSpec) -> anyhow::Result<Nginx> {
    use std::os::unix::fs::PermissionsExt;
    let dir = engine::scratch::tempdir("rackbench-nginx-")
        .context("creating a temporary directory for nginx")?;
    let www = dir.path().join("www");
    std::fs::create_dir(&www).context("creating nginx's document root")?;
    std::fs::write(www.join(STATIC_FILE), static_content(spec.file_size))
        .context("writing the static file")?;
    // Run as root, nginx's workers drop to `nobody`: they must be able to read the files.
    for p in [dir.path(), www.as_path()] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755))?;
    }
    std::fs::set_permissions(
        www.join(STATIC_FILE),
        std::fs::Permissions::from_mode(0o644),
    )?;
    let port = free_port_on(&spec.bind_ip.to_string())?;
    let addr = SocketAddr::new(spec.bind_ip, port);
    let (temps, stub_status) = build_features(&spec.binary);
    let config = render_config(
        dir.path(),
        addr,
        spec.workers,
        &spec.cpus,
        &temps,
        stub_status,
    );
    let conf_path = dir.path().join("nginx.conf");
    std::fs::write(&conf_path, &config).context("writing nginx.conf")?;
    let mut cmd = Command::new(&spec.binary);
    cmd.arg("-p")
        .arg(dir.path())
        .arg("-c")
        .arg(&conf_path)
        .arg("-e")
        .arg(dir.path().join("error.log"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    pin_command(&mut cmd, &spec.cpus);
    let mut guard = ChildGuard::spawn("nginx", &mut cmd)?;
    if let Err(e) = wait_for_port(addr, &mut guard, Duration::from_secs(10)) {
        let tail = log_tail(&dir.path().join("error.log"));
        anyhow::bail!(
            "{e:#}\nnginx's error log says:\n{tail}\n(config: {}; or use --target http://HOST:PORT/ for a server you run)",
            conf_path.display()
        );
    }
    // Workers fork right after the master binds; give them a moment to appear.
    let mut workers = Vec::new();
    for _ in 0..50 {
        workers = children(guard.pid());
        if workers.len() >= spec.workers {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(Nginx {
        guard,
        addr,
        version: version(&spec.binary),
        config,
        workers,
        stub_status,
        dir,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stub_status_counts() {
        // nginx 1.22's stub_status page.
        let page = "HTTP/1.1 200 OK\r\nContent-Length: 97\r\n\r\nActive connections: 1 \nserver accepts handled requests\n 3 3 4017 \nReading: 0 Writing: 1 Waiting: 0 \n";
        assert_eq!(parse_stub_status(page), Some(4017));
        assert_eq!(parse_stub_status("nothing"), None);
    }

    #[test]
    fn affinity_masks_put_cpu0_rightmost() {
        assert_eq!(affinity_masks(2, &[0, 1]), vec!["1", "10"]);
        assert_eq!(affinity_masks(3, &[2]), vec!["100", "100", "100"]);
        assert!(affinity_masks(2, &[]).is_empty());
    }

    #[test]
    fn config_keeps_everything_in_its_directory() {
        let c = render_config(
            Path::new("/tmp/x"),
            ([127, 0, 0, 1], 8080).into(),
            2,
            &[0, 1],
            &["client_body", "proxy"],
            true,
        );
        for want in [
            "daemon off;",
            "master_process on;",
            "worker_processes 2;",
            "worker_cpu_affinity 1 10;",
            "pid /tmp/x/nginx.pid;",
            "error_log /tmp/x/error.log warn;",
            "access_log off;",
            "client_body_temp_path /tmp/x/client_body_temp;",
            "proxy_temp_path /tmp/x/proxy_temp;",
            "listen 127.0.0.1:8080",
            "root /tmp/x/www;",
            "keepalive_requests 100000000;",
            "location = /rackbench_status { stub_status; }",
        ] {
            assert!(c.contains(want), "missing `{want}` in\n{c}");
        }
        let plain = render_config(
            Path::new("/d"),
            "[::1]:1".parse().unwrap(),
            1,
            &[],
            &[],
            false,
        );
        assert!(plain.contains("listen [::1]:1 "));
        assert!(!plain.contains("affinity") && !plain.contains("stub_status"));
        assert_eq!(static_content(1000).len(), 1000);
        assert!(static_content(0).is_empty());
    }
}
