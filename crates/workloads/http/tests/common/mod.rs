//! An in-process HTTP/1.1 server whose service time the test controls: one thread per
//! connection, and `workers` permits that each request holds for `service` (a sleep), so
//! its capacity is `workers / service` requests per second and its latency curve is
//! known. It counts the requests it answered, for cross-checking the generator.
//!
//! And the hosts a test's workload acts through: local hosts, one as both system under
//! test and load generator (the single-host run), or one serving and others generating.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::Duration;

use engine::workload::{Ctx, Registration};

pub fn catalog(name: &str) -> Option<Registration> {
    (name == "http").then(rackbench_http::registration)
}

/// A context whose hosts are `sut` (the service) and `loadgens`, all local.
pub fn ctx_on(sut: &str, loadgens: &[&str]) -> Ctx {
    Ctx {
        roles: Some(hosts::local_roles(catalog, sut, loadgens)),
        ..Ctx::quiet()
    }
}

/// One local host, both system under test and load generator.
pub fn local() -> Ctx {
    ctx_on("local", &["local"])
}

pub struct SlowServer {
    pub addr: SocketAddr,
    pub served: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    acceptor: Option<thread::JoinHandle<()>>,
}

struct Permits {
    free: Mutex<usize>,
    cv: Condvar,
}

impl Permits {
    fn acquire(&self) {
        let mut f = self.free.lock().unwrap();
        while *f == 0 {
            f = self.cv.wait(f).unwrap();
        }
        *f -= 1;
    }
    fn release(&self) {
        *self.free.lock().unwrap() += 1;
        self.cv.notify_one();
    }
}

impl SlowServer {
    pub fn start(workers: usize, service: Duration) -> SlowServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let served = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let permits = Arc::new(Permits {
            free: Mutex::new(workers),
            cv: Condvar::new(),
        });
        let (s2, st2) = (served.clone(), stop.clone());
        let acceptor = thread::spawn(move || {
            while !st2.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        let (s3, st3, p3) = (s2.clone(), st2.clone(), permits.clone());
                        thread::spawn(move || serve(conn, service, &p3, &s3, &st3));
                    }
                    Err(_) => thread::sleep(Duration::from_millis(2)),
                }
            }
        });
        SlowServer {
            addr,
            served,
            stop,
            acceptor: Some(acceptor),
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Stop accepting and close every connection at its next read.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(a) = self.acceptor.take() {
            let _ = a.join();
        }
    }
}

impl Drop for SlowServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn serve(
    mut conn: TcpStream,
    service: Duration,
    permits: &Permits,
    served: &AtomicU64,
    stop: &AtomicBool,
) {
    let _ = conn.set_nodelay(true);
    let _ = conn.set_read_timeout(Some(Duration::from_millis(50)));
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        // Answer every complete request in the buffer (GETs: no bodies).
        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.drain(..end + 4);
            permits.acquire();
            thread::sleep(service);
            permits.release();
            served.fetch_add(1, Ordering::Relaxed);
            if conn
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .is_err()
            {
                return;
            }
        }
        match conn.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => return,
        }
    }
}
