use super::*;

#[test]
fn durations() {
    for (s, want) in [
        ("90m", 5400),
        ("2.5h", 9000),
        ("1h30m", 5400),
        ("45s", 45),
        ("1d", 86400),
        (" 2H ", 7200),
    ] {
        assert_eq!(parse_duration(s).expect(s), want, "{s}");
    }
    for s in ["", "90", "m", "1x", "-5m", "0s", "1..5h", "400d"] {
        assert!(parse_duration(s).is_err(), "{s:?} should be refused");
    }
}

#[test]
fn spec_validation() {
    let ok = GuardSpec::new(60, ActionKind::Poweroff);
    assert!(ok.validate().is_ok());
    let short = GuardSpec::new(59, ActionKind::Poweroff);
    assert!(
        short.validate().is_err(),
        "under a minute with the normal period"
    );
    let test_timing = GuardSpec {
        period_s: 1,
        ..GuardSpec::new(3, ActionKind::Poweroff)
    };
    assert!(test_timing.validate().is_ok(), "test setting");
    let no_cmd = GuardSpec::new(60, ActionKind::Command);
    assert!(no_cmd.validate().is_err());
    let stray = GuardSpec {
        command: Some("x".into()),
        ..GuardSpec::new(60, ActionKind::Poweroff)
    };
    assert!(stray.validate().is_err());
    let util = GuardSpec {
        util_below: 0,
        ..GuardSpec::new(60, ActionKind::Poweroff)
    };
    assert!(util.validate().is_err());
}

#[test]
fn facts_and_actions() {
    let f = parse_facts(
        "uid=1000\nsudo=1\nssh=127.0.0.1 51234 127.0.0.1 2222\npath=/usr/bin:/bin\nhome=/home/u\nnow=1764000000\npoweroff=1\npoweroff_path=/usr/sbin/poweroff\nsudo_poweroff=1\ncrontab=1\n",
    );
    assert_eq!(f.uid, Some(1000));
    assert!(f.sudo && f.poweroff && f.crontab && !f.systemd);
    assert_eq!(f.ssh_port, Some(2222));
    assert_eq!(f.now_s, Some(1_764_000_000));
    let spec = GuardSpec::new(600, ActionKind::Poweroff);
    assert_eq!(resolve_action(&spec, &f).expect("sudo"), "sudo -n poweroff");
    let root = HostFacts {
        uid: Some(0),
        sudo: false,
        ..f.clone()
    };
    assert_eq!(
        resolve_action(&spec, &root).expect("root"),
        "/usr/sbin/poweroff",
        "root runs it by the path found (the guard's PATH is the login's)"
    );
    // Debian: /usr/sbin is not on the login PATH; sudo's secure_path did not find it either,
    // but it is there: sudo runs it by its path.
    let by_path = HostFacts {
        sudo_poweroff: false,
        ..f.clone()
    };
    assert_eq!(
        resolve_action(&spec, &by_path).expect("by path"),
        "sudo -n /usr/sbin/poweroff"
    );
    let nowhere = HostFacts {
        sudo_poweroff: false,
        poweroff: false,
        poweroff_path: None,
        ..f.clone()
    };
    let e = resolve_action(&spec, &nowhere).expect_err("none");
    assert_eq!(crate::Coded::code(&e), "guard_poweroff_unavailable");
    let neither = HostFacts {
        sudo: false,
        ..f.clone()
    };
    let e = resolve_action(&spec, &neither).expect_err("no way");
    assert_eq!(crate::Coded::code(&e), "guard_poweroff_unavailable");
    let stop = GuardSpec::new(600, ActionKind::Stop);
    let e = resolve_action(&stop, &f).expect_err("not wired");
    assert_eq!(crate::Coded::code(&e), "guard_provider_action_unavailable");
    assert_eq!(watch_ports(&spec, &f), vec![22, 2222]);
}

/// The conf is valid sh whatever the values hold, and reads back as written.
#[cfg(unix)] // runs the local `sh`
#[test]
fn conf_round_trips_through_sh() {
    let f = parse_facts(
        "uid=0\nssh=1.2.3.4 5 6.7.8.9 41022\npath=/opt/it's here:/bin\nnow=1000\npoweroff=1\n",
    );
    let spec = GuardSpec {
        deadline_in_s: Some(9000),
        command: Some("echo 'stop' $(whoami); touch /tmp/x".into()),
        ..GuardSpec::new(1800, ActionKind::Command)
    };
    let action = resolve_action(&spec, &f).expect("command");
    let conf = conf_text(
        &spec,
        &f,
        &action,
        "nvidia-smi --query-gpu=index --format=csv,nounits",
        "a b",
    )
    .expect("conf");
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "{conf}\nprintf '%s|%s|%s|%s|%s|%s|%s|%s\\n' \"$IDLE\" \"$DEADLINE_IN\" \"$DEADLINE_ID\" \"$PORTS\" \"$ACTION\" \"$GUARD_PATH\" \"$PERIOD\" \"$INACTIVE\""
        ))
        .output()
        .expect("sh");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "1800|9000|1000-9000|22 41022|echo 'stop' $(whoami); touch /tmp/x|/opt/it's here:/bin|30|7200"
    );
}

#[test]
fn decisions_state_and_fetch_parse() {
    let line = r#"{"at":1796116689,"decision":"act","why":"idle","gpu":"idle","gpu_why":"","gpu_util_max":0,"gpu_procs":0,"ssh":"idle","ssh_conns":0,"ollama":"absent","jupyter":"absent","idle_since":1796116686,"idle_s":3,"deadline":null,"snooze_until":null,"period_s":1,"action_rc":0}"#;
    let (ds, bad) = parse_decisions(&format!("{line}\n{{\"at\":17961"));
    assert_eq!((ds.len(), bad), (1, 1));
    assert!(ds[0].is_action());
    assert_eq!(ds[0].idle_since, Some(1_796_116_686));
    assert_eq!(
        parse_state("running=1 pid=42 boot=crontab"),
        Some(ScriptState {
            running: true,
            pid: Some(42),
            boot: Boot::Crontab
        })
    );
    assert_eq!(
        parse_state("running=0 pid= boot=none").map(|s| s.pid),
        Some(None)
    );
    let f = ssh::parse_fetched(&format!(
        "@@state\nrunning=1 pid=7 boot=none\n@@log\n{line}\n@@gpu\nindex, utilization.gpu [%]\n0, 3\n@@apps\n@@warning\n@@snooze\n1796117000\n@@now\n1796116690\n"
    ));
    assert!(f.installed);
    assert_eq!(f.state.map(|s| s.pid), Some(Some(7)));
    assert_eq!(f.snooze_until, Some(1_796_117_000));
    assert_eq!(f.host_now_s, Some(1_796_116_690));
    assert_eq!(f.warning, None);
    assert!(f.gpu_csv.contains("0, 3"));
    assert!(!ssh::parse_fetched("@@none\n").installed);
}

/// The facts exec, run locally with a login PATH that lacks the sbin folders (Debian's default
/// for non-root logins): poweroff is still found where it lives (before: "there is no poweroff
/// command on the host").
#[cfg(unix)]
#[test]
fn facts_find_poweroff_off_the_login_path() {
    let found = [
        "/usr/sbin/poweroff",
        "/sbin/poweroff",
        "/usr/bin/poweroff",
        "/bin/poweroff",
    ]
    .into_iter()
    .find(|p| std::path::Path::new(p).exists());
    let Some(found) = found else {
        eprintln!("SKIP: this machine has no poweroff");
        return;
    };
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(ssh::FACTS)
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .output()
        .expect("sh");
    let f = parse_facts(&String::from_utf8_lossy(&out.stdout));
    let on_path = ["/usr/local/bin", "/usr/bin", "/bin"]
        .iter()
        .map(|d| format!("{d}/poweroff"))
        .find(|p| std::path::Path::new(p).exists());
    assert!(f.poweroff, "{out:?}");
    assert_eq!(
        f.poweroff_path.as_deref(),
        Some(on_path.as_deref().unwrap_or(found))
    );
}

#[test]
fn status_says_when_the_guard_is_stale() {
    let line = |mono: i64| {
        format!(
            r#"{{"at":1796116689,"decision":"keep","why":"gpu","gpu":"busy","gpu_why":"hung","gpu_util_max":null,"gpu_procs":null,"ssh":"idle","ssh_conns":0,"ollama":"absent","jupyter":"absent","idle_since":null,"idle_s":1800,"deadline":null,"snooze_until":null,"period_s":30,"action_rc":null,"mono":{mono}}}"#
        )
    };
    let bid = "0f0e-boot";
    let fetched = |mono_line: i64, up_cs: i64, uptime: &str, boot: &str| {
        ssh::parse_fetched(&format!(
            "@@state\nrunning=1 pid=7 boot=none\n@@log\n{}\n@@now\n1796116999\n@@mono\n{bid} {up_cs} 500000\n\n{uptime} 1.0\n{boot}\n",
            line(mono_line)
        ))
    };
    // mono now = 5000 s + (uptime now - uptime then): 5000 + 200 = 5200; the last sample at 4990.
    let f = fetched(4990, 10_000, "300.00", bid);
    assert_eq!(f.mono_now_s, Some(5200));
    let st = crate::app::guard::status_from("gpu", None, &f);
    assert_eq!(st.last_sample_age_s, Some(210));
    assert!(st.stale, "{st:?}");
    assert!(st.notes.iter().any(|n| n == "guard_stale"));
    assert!(st.notes.iter().any(|n| n == "no_deadline"));
    // A sample 10 s ago is fresh; after a reboot the age is unknown (never called stale).
    let st = crate::app::guard::status_from("gpu", None, &fetched(5190, 10_000, "300.00", bid));
    assert!(!st.stale && st.last_sample_age_s == Some(10), "{st:?}");
    let st = crate::app::guard::status_from("gpu", None, &fetched(4990, 10_000, "300.00", "other"));
    assert!(!st.stale && st.last_sample_age_s.is_none(), "{st:?}");
}

/// A first sample's CPU and network: unreadable (busy) with why `no_reading_yet`, which the status
/// passes on (the UI and CLI say "no reading yet", not "cannot read").
#[test]
fn a_first_sample_says_no_reading_yet() {
    let line = r#"{"at":1796116689,"decision":"keep","why":"cpu,net","gpu":"idle","gpu_why":"","gpu_util_max":0,"gpu_procs":0,"ssh":"idle","ssh_conns":0,"ollama":"absent","jupyter":"absent","cpu":"unreadable","cpu_why":"no_reading_yet","cpu_pct":null,"net":"unreadable","net_why":"no_reading_yet","net_kbps":null,"keepalive":"idle","idle_since":null,"idle_s":1800,"deadline":null,"snooze_until":null,"period_s":30,"action_rc":null}"#;
    let f = super::ssh::Fetched {
        installed: true,
        log: format!("{line}\n"),
        ..Default::default()
    };
    let st = crate::app::guard::status_from("gpu", None, &f);
    let cpu = st.cpu.expect("cpu");
    assert_eq!(
        (cpu.state.as_str(), cpu.why.as_deref()),
        ("unreadable", Some("no_reading_yet"))
    );
    let net = st.net.expect("net");
    assert_eq!(net.why.as_deref(), Some("no_reading_yet"));
}
