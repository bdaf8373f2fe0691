//! Fuzz the pasted-console-text parser: any input, no panic; what parses satisfies the invariants.
//! (A seeded, bounded version of this runs in plain `cargo test`: src/hostparse/fuzz_tests.rs.)
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(p) = gpurent_core::hostparse::parse(&text) {
        assert!(!p.host.is_empty() && !p.host.contains(char::is_whitespace));
        assert!(!p.host.starts_with('-') && !p.user.starts_with('-'));
        assert!(p.port >= 1);
        let _ = p.summary();
    }
});
