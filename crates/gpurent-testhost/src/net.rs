//! Network misbehaviour on loopback: a peer that never speaks, a closed port, and a delay proxy.
//!
//! This kernel has no `netem`, so latency is simulated in userspace: [`DelayProxy`] stamps every
//! chunk it reads with "now + delay" and its writer sends it no earlier than that, in order. It
//! shapes SSH round trips (what channel windows and SFTP pipelining react to), not TCP congestion,
//! and adds no loss. A bounded queue per direction gives back-pressure.
//!
//! [`DelayProxy::drop_silently`] is a link that dies without a FIN or an RST (a NAT that forgot the
//! flow, a cable pulled between two routers): both ends keep their sockets, nothing more arrives,
//! and once the buffers fill their writes block.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A loopback port with nothing listening on it: connecting is refused.
/// (Bound then released; another process could take it in between, which tests tolerate.)
pub fn closed_port() -> io::Result<u16> {
    let l = TcpListener::bind("127.0.0.1:0")?;
    let port = l.local_addr()?.port();
    drop(l);
    Ok(port)
}

/// Accepts TCP connections and holds them open without ever sending a byte: what an overloaded
/// host, a black-holing firewall after connect, or a non-SSH service that waits for the client
/// looks like to an SSH client.
#[derive(Debug)]
pub struct SilentListener {
    port: u16,
    stop: Arc<AtomicBool>,
    held: Arc<Mutex<Vec<TcpStream>>>,
    thread: Option<JoinHandle<()>>,
}

impl SilentListener {
    pub fn start() -> io::Result<SilentListener> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let stop = Arc::new(AtomicBool::new(false));
        let held = Arc::new(Mutex::new(Vec::new()));
        let (s, h) = (stop.clone(), held.clone());
        let thread = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                if let (Ok(c), Ok(mut h)) = (conn, h.lock()) {
                    h.push(c);
                }
            }
        });
        Ok(SilentListener {
            port,
            stop,
            held,
            thread: Some(thread),
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// How many connections it has accepted so far.
    pub fn accepted(&self) -> usize {
        self.held.lock().map(|h| h.len()).unwrap_or(0)
    }
}

impl Drop for SilentListener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port)); // wake the accept loop
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[derive(Debug)]
struct Shared {
    stop: AtomicBool,
    one_way: Mutex<Duration>,
    /// Both sockets of every live connection (clones), so `cut` can shut them down.
    live: Mutex<Vec<TcpStream>>,
    forwarded: AtomicU64,
    cut_at: AtomicU64,
    /// Connections numbered below this are dropped silently.
    silent_below: AtomicU64,
    next_id: AtomicU64,
}

impl Shared {
    fn cut_all(&self) {
        if let Ok(mut live) = self.live.lock() {
            for s in live.drain(..) {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
    }
}

/// A TCP proxy on 127.0.0.1 that forwards to `upstream` with a configurable one-way delay in
/// each direction (so RTT ≈ 2 × delay), byte order preserved, and a way to cut connections.
#[derive(Debug)]
pub struct DelayProxy {
    port: u16,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

/// Chunks queued per direction (× up to 64 KiB each = 16 MiB of back-pressure).
const QUEUE_CHUNKS: usize = 256;

impl DelayProxy {
    pub fn start(upstream: SocketAddr, one_way: Duration) -> io::Result<DelayProxy> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            one_way: Mutex::new(one_way),
            live: Mutex::new(Vec::new()),
            forwarded: AtomicU64::new(0),
            cut_at: AtomicU64::new(u64::MAX),
            silent_below: AtomicU64::new(0),
            next_id: AtomicU64::new(0),
        });
        let sh = shared.clone();
        let thread = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if sh.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = conn else { continue };
                let Ok(server) = TcpStream::connect(upstream) else {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                if let Err(e) = wire(&sh, client, server) {
                    eprintln!("delay proxy: {e}");
                }
            }
        });
        Ok(DelayProxy {
            port,
            shared,
            thread: Some(thread),
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Change the one-way delay for chunks read from now on.
    pub fn set_delay(&self, one_way: Duration) {
        if let Ok(mut d) = self.shared.one_way.lock() {
            *d = one_way;
        }
    }

    /// Cut every live connection now (both directions; both ends see the connection end).
    pub fn cut(&self) {
        self.shared.cut_all();
    }

    /// Drop every live connection silently: from now on nothing is read from or written to either
    /// end, and neither end is closed (no FIN, no RST) — until the proxy is dropped. Connections
    /// made afterwards are forwarded normally.
    pub fn drop_silently(&self) {
        let next = self.shared.next_id.load(Ordering::SeqCst);
        self.shared.silent_below.store(next, Ordering::SeqCst);
    }

    /// Cut every live connection once this many more bytes (both directions together) have been
    /// forwarded. New connections after the cut are forwarded normally.
    pub fn cut_after(&self, bytes: u64) {
        let now = self.shared.forwarded.load(Ordering::SeqCst);
        self.shared
            .cut_at
            .store(now.saturating_add(bytes), Ordering::SeqCst);
    }

    /// Bytes forwarded so far, both directions together.
    pub fn forwarded_bytes(&self) -> u64 {
        self.shared.forwarded.load(Ordering::SeqCst)
    }
}

impl Drop for DelayProxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.cut_all();
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn wire(sh: &Arc<Shared>, client: TcpStream, server: TcpStream) -> io::Result<()> {
    if let Ok(mut live) = sh.live.lock() {
        live.push(client.try_clone()?);
        live.push(server.try_clone()?);
    }
    let id = sh.next_id.fetch_add(1, Ordering::SeqCst);
    pipe(sh.clone(), id, client.try_clone()?, server.try_clone()?)?;
    pipe(sh.clone(), id, server, client)?;
    Ok(())
}

impl Shared {
    fn silenced(&self, id: u64) -> bool {
        id < self.silent_below.load(Ordering::SeqCst)
    }

    /// Park a silenced connection's thread until the proxy stops (its socket stays open).
    fn park(&self) {
        while !self.stop.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

type Chunk = Option<(Instant, Vec<u8>)>;

/// One direction: a reader thread stamps chunks, a writer thread releases them on time.
fn pipe(sh: Arc<Shared>, id: u64, mut from: TcpStream, mut to: TcpStream) -> io::Result<()> {
    let (tx, rx): (SyncSender<Chunk>, Receiver<Chunk>) = sync_channel(QUEUE_CHUNKS);
    let from_for_writer = from.try_clone()?;
    let sh_r = sh.clone();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let r = from.read(&mut buf);
            if sh_r.silenced(id) {
                // Read no more (the sender's buffers fill, as over a dead link) and close nothing.
                sh_r.park();
                return;
            }
            match r {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let delay = sh_r.one_way.lock().map(|d| *d).unwrap_or_default();
                    let total = sh_r.forwarded.fetch_add(n as u64, Ordering::SeqCst) + n as u64;
                    if tx
                        .send(Some((Instant::now() + delay, buf[..n].to_vec())))
                        .is_err()
                    {
                        break;
                    }
                    if total >= sh_r.cut_at.load(Ordering::SeqCst) {
                        sh_r.cut_at.store(u64::MAX, Ordering::SeqCst);
                        sh_r.cut_all();
                        break;
                    }
                }
            }
        }
        let _ = tx.send(None);
    });
    std::thread::spawn(move || {
        while let Ok(Some((due, data))) = rx.recv() {
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            if sh.silenced(id) {
                sh.park();
                return;
            }
            if to.write_all(&data).is_err() {
                let _ = from_for_writer.shutdown(Shutdown::Both);
                return;
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxy_delays_and_keeps_order_and_cuts() {
        // An echo server upstream.
        let echo = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = echo.local_addr().expect("addr");
        std::thread::spawn(move || {
            for c in echo.incoming() {
                let Ok(mut c) = c else { continue };
                std::thread::spawn(move || {
                    let mut r = c.try_clone().expect("clone");
                    let _ = io::copy(&mut r, &mut c);
                });
            }
        });
        let proxy = DelayProxy::start(addr, Duration::from_millis(40)).expect("proxy");
        let mut c = TcpStream::connect(("127.0.0.1", proxy.port())).expect("connect");
        let payload: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let t0 = Instant::now();
        let mut w = c.try_clone().expect("clone");
        let p2 = payload.clone();
        let writer = std::thread::spawn(move || w.write_all(&p2).expect("write"));
        let mut back = vec![0u8; payload.len()];
        c.read_exact(&mut back).expect("echo");
        let rtt = t0.elapsed();
        writer.join().expect("join");
        assert_eq!(back, payload, "bytes arrive in order");
        assert!(rtt >= Duration::from_millis(80), "round trip took {rtt:?}");
        assert!(proxy.forwarded_bytes() >= 2 * payload.len() as u64);

        proxy.cut();
        let mut one = [0u8; 1];
        c.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        assert!(matches!(c.read(&mut one), Ok(0) | Err(_)), "cut ends it");
    }

    #[test]
    fn a_silent_drop_delivers_nothing_more_and_closes_nothing() {
        let echo = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = echo.local_addr().expect("addr");
        std::thread::spawn(move || {
            for c in echo.incoming() {
                let Ok(mut c) = c else { continue };
                std::thread::spawn(move || {
                    let mut r = c.try_clone().expect("clone");
                    let _ = io::copy(&mut r, &mut c);
                });
            }
        });
        let proxy = DelayProxy::start(addr, Duration::ZERO).expect("proxy");
        let mut c = TcpStream::connect(("127.0.0.1", proxy.port())).expect("connect");
        c.set_read_timeout(Some(Duration::from_millis(500)))
            .expect("timeout");
        let mut b = [0u8; 4];
        c.write_all(b"ping").expect("write");
        c.read_exact(&mut b).expect("echo before the drop");
        proxy.drop_silently();
        c.write_all(b"pong").expect("the socket is still open");
        let r = c.read(&mut b);
        assert!(
            matches!(&r, Err(e) if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::TimedOut),
            "neither data nor an end: {r:?}"
        );
        // A new connection goes through.
        let mut d = TcpStream::connect(("127.0.0.1", proxy.port())).expect("connect");
        d.set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        d.write_all(b"next").expect("write");
        d.read_exact(&mut b).expect("echo after the drop");
        assert_eq!(&b, b"next");
    }

    #[test]
    fn silent_listener_accepts_and_says_nothing() {
        let l = SilentListener::start().expect("listen");
        let mut c = TcpStream::connect(("127.0.0.1", l.port())).expect("connect");
        c.set_read_timeout(Some(Duration::from_millis(200)))
            .expect("timeout");
        let mut b = [0u8; 1];
        let r = c.read(&mut b);
        assert!(
            matches!(&r, Err(e) if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::TimedOut),
            "{r:?}"
        );
    }

    #[test]
    fn closed_port_refuses() {
        let port = closed_port().expect("port");
        let r = TcpStream::connect(("127.0.0.1", port));
        assert_eq!(
            r.err().map(|e| e.kind()),
            Some(io::ErrorKind::ConnectionRefused)
        );
    }
}
