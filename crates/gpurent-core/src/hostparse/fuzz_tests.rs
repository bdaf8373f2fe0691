//! A deterministic, bounded stand-in for the `cargo fuzz` target (`fuzz/fuzz_targets/hostparse.rs`)
//! that runs in plain `cargo test`: seeded random and mutated inputs must never panic, and what
//! parses must satisfy the parser's invariants.

use super::*;

/// xorshift64*: small, seeded, reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const TOKENS: &[&str] = &[
    "ssh",
    "scp",
    "sftp",
    "sshpass",
    " ",
    "  ",
    "\t",
    "\n",
    "\r\n",
    "-",
    "-p",
    "-P",
    "-o",
    "-J",
    "-l",
    "-i",
    "-L",
    "--",
    "=",
    ":",
    "：",
    "@",
    "＠",
    "[",
    "]",
    "'",
    "\"",
    "\\",
    "\\\n",
    "密码",
    "密码：",
    "Password:",
    "pwd=",
    "登录指令：",
    "ssh://",
    "scp://",
    "::",
    "%eth0",
    "22",
    "0",
    "65535",
    "99999",
    "root",
    "ubuntu",
    "a.example.com",
    "1.2.3.4",
    "2001:db8::1",
    "\u{3000}",
    "\u{00a0}",
    "\u{200b}",
    "“",
    "”",
    "「",
    "」",
    "（",
    "）",
    "。",
    "$(",
    "`",
    "#",
    ";",
    "&&",
    "|",
    ",",
    "ProxyCommand=",
    "Port=",
    "User ",
    "HostName=",
    "ProxyJump=",
    "none",
    "é",
    "😀",
    "\u{0}",
];

const SEEDS: &[&str] = &[
    "登录指令：ssh -p 38211 root@region-3.example.com 密码：Ab12cd34Ef",
    "ssh root@194.68.245.10 -p 22022 -i ~/.ssh/id_ed25519",
    "ssh -p 41234 root@ssh5.vast.ai -L 8080:localhost:8080",
    "ssh -J jump@bastion.example.com:2222 -o ProxyCommand='nc %h %p' root@[2001:db8::10] -p 2",
    "scp -P 38211 -r ./data root@region-3.example.com:/root/",
    "主机：h.example.com\n端口：41022\n用户名：root\n密码\nZz9!x",
    "sshpass -p 's3cr3t' ssh ssh://u@h.example.com:1",
];

fn random_text(rng: &mut Rng) -> String {
    let mut s = String::new();
    for _ in 0..rng.below(40) {
        if rng.below(4) == 0 {
            // A random scalar value (any plane).
            let c = char::from_u32(rng.next() as u32 % 0x11_0000).unwrap_or('?');
            s.push(c);
        } else {
            s.push_str(TOKENS[rng.below(TOKENS.len())]);
        }
    }
    s
}

fn char_boundary(s: &str, rng: &mut Rng) -> usize {
    let idx: Vec<usize> = s.char_indices().map(|(i, _)| i).chain([s.len()]).collect();
    idx[rng.below(idx.len())]
}

fn mutate(seed: &str, rng: &mut Rng) -> String {
    let mut s = seed.to_string();
    for _ in 0..=rng.below(6) {
        let at = char_boundary(&s, rng);
        match rng.below(4) {
            0 => s.insert_str(at, TOKENS[rng.below(TOKENS.len())]),
            1 => s.truncate(at),
            2 => {
                let end = char_boundary(&s[at..], rng) + at;
                s.replace_range(at..end, "");
            }
            _ => {
                let other = SEEDS[rng.below(SEEDS.len())];
                let cut = char_boundary(other, rng);
                s.insert_str(at, &other[cut..]);
            }
        }
    }
    s
}

fn check(input: &str) {
    let result = std::panic::catch_unwind(|| parse(input));
    let Ok(result) = result else {
        panic!("parser panicked on {input:?}");
    };
    let Ok(p) = result else { return };
    assert!(
        !p.host.is_empty() && !p.host.contains(char::is_whitespace),
        "{input:?}: {p:?}"
    );
    assert!(!p.host.starts_with('-'), "{input:?}: {p:?}");
    assert!(p.port >= 1);
    assert!(
        !p.user.is_empty() && !p.user.starts_with('-'),
        "{input:?}: {p:?}"
    );
    if let Some(pw) = &p.password {
        let pw = pw.expose();
        assert!(!pw.is_empty());
        // A password that appears once in the text is taken out before anything else reads it.
        if pw.len() >= 4 && input.matches(pw).count() == 1 {
            let shown = serde_json::to_string(&p.summary()).expect("json");
            assert!(!shown.contains(pw), "{input:?}: password in {shown}");
        }
    }
}

#[test]
fn random_and_mutated_inputs_never_panic() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut ok = 0;
    for i in 0..20_000 {
        let input = if i % 2 == 0 {
            random_text(&mut rng)
        } else {
            mutate(SEEDS[rng.below(SEEDS.len())], &mut rng)
        };
        check(&input);
        ok += usize::from(parse(&input).is_ok());
    }
    // The mutations keep many inputs valid, so the success paths are exercised too.
    assert!(ok > 1_000, "only {ok} inputs parsed");
}

#[test]
fn raw_bytes_never_panic() {
    let mut rng = Rng(42);
    for _ in 0..5_000 {
        let bytes: Vec<u8> = (0..rng.below(200)).map(|_| rng.next() as u8).collect();
        check(&String::from_utf8_lossy(&bytes));
    }
}
