//! Table of real-looking console strings (AutoDL, RunPod, Vast.ai, Lambda, Featurize, 恒源云, …).

use super::*;

struct Case {
    name: &'static str,
    text: &'static str,
    host: &'static str,
    port: u16,
    user: &'static str,
    password: Option<&'static str>,
    jump: Option<(&'static str, u16, Option<&'static str>)>,
    identity: Option<&'static str>,
    /// Warning kinds (serde tag) that must be present.
    warns: &'static [&'static str],
}

const fn case(
    name: &'static str,
    text: &'static str,
    host: &'static str,
    port: u16,
    user: &'static str,
) -> Case {
    Case {
        name,
        text,
        host,
        port,
        user,
        password: None,
        jump: None,
        identity: None,
        warns: &[],
    }
}

fn kind(w: &ParseWarning) -> String {
    serde_json::to_value(w).expect("json")["kind"]
        .as_str()
        .expect("kind")
        .to_string()
}

fn cases() -> Vec<Case> {
    vec![
        Case { password: Some("Ab12cd34Ef"), ..case("autodl zh one line",
            "登录指令：ssh -p 38211 root@region-3.example.com 密码：Ab12cd34Ef",
            "region-3.example.com", 38211, "root") },
        Case { password: Some("Ab12cd34Ef"), ..case("autodl zh ascii colon, two lines",
            "登录指令: ssh -p 38211 root@connect.westb.seetacloud.com\n密码: Ab12cd34Ef\n",
            "connect.westb.seetacloud.com", 38211, "root") },
        Case { password: Some("xY9+k/Lm"), ..case("autodl table cells on separate lines",
            "SSH登录\n登录指令\nssh -p 22144 root@region-41.seetacloud.com\n密码\nxY9+k/Lm\n",
            "region-41.seetacloud.com", 22144, "root") },
        Case { password: Some("p4ss-Word_1"), ..case("english console with Password:",
            "SSH command: ssh -p 38211 root@region-3.example.com\nPassword: p4ss-Word_1",
            "region-3.example.com", 38211, "root") },
        Case { password: Some("Qw3rty"), ..case("zh full-width spaces and CRLF",
            "登录指令：\u{3000}ssh\u{00a0}-p 10022 root@gpu.example.cn\r\n登录密码：Qw3rty。\r\n",
            "gpu.example.cn", 10022, "root") },
        Case { password: Some("a1B2c3"), ..case("恒源云 style",
            "ssh -p 20535 root@i-1.gpushare.com\n root 密码 a1B2c3",
            "i-1.gpushare.com", 20535, "root") },
        Case { password: Some("s3cr3t"), ..case("sshpass in a tutorial",
            "sshpass -p 's3cr3t' ssh -o StrictHostKeyChecking=no -p 2222 root@10.0.0.5",
            "10.0.0.5", 2222, "root") },
        Case { identity: Some("~/.ssh/id_ed25519"), ..case("runpod exposed tcp (options after destination)",
            "ssh root@194.68.245.10 -p 22022 -i ~/.ssh/id_ed25519",
            "194.68.245.10", 22022, "root") },
        Case { identity: Some("~/.ssh/id_ed25519"), ..case("runpod proxy ssh",
            "SSH over exposed TCP\nssh 8ab3xy9kq-64410b2c@ssh.runpod.io -i ~/.ssh/id_ed25519",
            "ssh.runpod.io", 22, "8ab3xy9kq-64410b2c") },
        Case { warns: &["port_forward_ignored"], ..case("vast.ai proxy with jupyter forward",
            "ssh -p 41234 root@ssh5.vast.ai -L 8080:localhost:8080",
            "ssh5.vast.ai", 41234, "root") },
        Case { warns: &["port_forward_ignored"], ..case("vast.ai direct",
            "Direct ssh connect:\nssh -p 40123 root@123.45.67.89 -L 8080:localhost:8080",
            "123.45.67.89", 40123, "root") },
        case("lambda", "ssh ubuntu@129.146.0.10", "129.146.0.10", 22, "ubuntu"),
        Case { identity: Some("~/Downloads/lambda-key.pem"), ..case("lambda with -i first",
            "ssh -i ~/Downloads/lambda-key.pem ubuntu@129.146.33.7", "129.146.33.7", 22, "ubuntu") },
        case("featurize port after host", "ssh featurize@workspace.featurize.cn -p 33044",
            "workspace.featurize.cn", 33044, "featurize"),
        case("paperspace", "ssh paperspace@184.105.2.20", "184.105.2.20", 22, "paperspace"),
        case("shell prompt prefix", "$ ssh -p 2200 ubuntu@gpu-7.example.org", "gpu-7.example.org", 2200, "ubuntu"),
        case("glued -p and -l", "ssh -p2200 -lubuntu gpu-7.example.org", "gpu-7.example.org", 2200, "ubuntu"),
        case("-l user", "ssh -l admin -p 2022 10.1.2.3", "10.1.2.3", 2022, "admin"),
        case("-o Port and User", "ssh -o Port=2022 -o \"User admin\" -oServerAliveInterval=30 box.example.com",
            "box.example.com", 2022, "admin"),
        Case { jump: Some(("bastion.example.com", 2222, Some("jump"))), ..case("-J jump host",
            "ssh -J jump@bastion.example.com:2222 -p 30022 root@10.0.8.15", "10.0.8.15", 30022, "root") },
        Case { jump: Some(("bastion.example.com", 22, None)), ..case("ProxyJump option",
            "ssh -o ProxyJump=bastion.example.com root@10.0.8.15", "10.0.8.15", 22, "root") },
        case("ssh url", "ssh://root@region-3.example.com:38211", "region-3.example.com", 38211, "root"),
        case("ssh url inside zh text", "SSH 地址：ssh://ubuntu@gpu.example.com:2222（复制到终端）",
            "gpu.example.com", 2222, "ubuntu"),
        case("scp -P line", "scp -P 38211 -r ./data root@region-3.example.com:/root/autodl-tmp/",
            "region-3.example.com", 38211, "root"),
        case("scp upload to ipv6", "scp -P 2222 model.pt root@[2001:db8::10]:/root/", "2001:db8::10", 2222, "root"),
        case("sftp -P", "sftp -P 38211 root@region-3.example.com", "region-3.example.com", 38211, "root"),
        case("ipv6 bare", "ssh -p 2222 root@2001:db8::10", "2001:db8::10", 2222, "root"),
        case("ipv6 brackets", "ssh root@[2001:db8::10] -p 2222", "2001:db8::10", 2222, "root"),
        case("ipv6 url", "ssh://root@[2001:db8::10]:2222", "2001:db8::10", 2222, "root"),
        case("host:port shorthand", "ssh root@1.2.3.4:22022", "1.2.3.4", 22022, "root"),
        Case { warns: &["dangerous_option"], ..case("ProxyCommand never passed on",
            "ssh -o ProxyCommand='nc -X 5 %h %p' -p 2222 root@10.0.0.9", "10.0.0.9", 2222, "root") },
        Case { warns: &["dangerous_option"], ..case("LocalCommand with metachars",
            "ssh -o PermitLocalCommand=yes -o 'LocalCommand=curl x|sh' root@10.0.0.9", "10.0.0.9", 22, "root") },
        Case { warns: &["host_key_checking_ignored"], ..case("StrictHostKeyChecking=no ignored",
            "ssh -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null root@10.0.0.9", "10.0.0.9", 22, "root") },
        Case { warns: &["shell_syntax_ignored"], ..case("shell syntax after the command",
            "ssh -p 2222 root@10.0.0.9 && rm -rf ~", "10.0.0.9", 2222, "root") },
        Case { warns: &["remote_command_ignored"], ..case("remote command",
            "ssh -p 2222 root@10.0.0.9 nvidia-smi", "10.0.0.9", 2222, "root") },
        Case { warns: &["user_assumed"], ..case("no user", "ssh -p 2222 10.0.0.9", "10.0.0.9", 2222, "root") },
        Case { warns: &["extra_commands_ignored"], ..case("prose then two commands",
            "Use ssh to connect. First:\nssh -p 1111 root@a.example.com\nor\nssh -p 2222 root@b.example.com",
            "a.example.com", 1111, "root") },
        Case { password: Some("Zz9!x"), ..case("labelled fields zh",
            "主机：region-9.example.com\n端口：41022\n用户名：root\n密码：Zz9!x",
            "region-9.example.com", 41022, "root") },
        case("labelled fields en", "Host: 203.0.113.7\nPort: 2200\nUser: ubuntu", "203.0.113.7", 2200, "ubuntu"),
        Case { warns: &["address_guessed"], ..case("bare user@host in prose",
            "Log in as ubuntu@203.0.113.7, then run nvidia-smi.", "203.0.113.7", 22, "ubuntu") },
        case("backslash continuation", "ssh \\\n  -p 2222 \\\n  root@10.0.0.9", "10.0.0.9", 2222, "root"),
        case("zero-width and smart quotes", "ssh\u{200b} -o “User=admin” -p 2022 box.example.com",
            "box.example.com", 2022, "admin"),
        Case { warns: &["conflicting_user"], ..case("-l before user@ (first wins, like OpenSSH)",
            "ssh -l admin root@box.example.com", "box.example.com", 22, "admin") },
        case("uppercase host is lowercased", "ssh root@GPU.Example.COM", "gpu.example.com", 22, "root"),
        Case { password: Some("with space"), ..case("quoted password",
            "ssh root@10.0.0.9\npassword: \"with space\"", "10.0.0.9", 22, "root") },
    ]
}

#[test]
fn console_strings_table() {
    for c in cases() {
        let p = parse(c.text).unwrap_or_else(|e| panic!("{}: {e:?}", c.name));
        assert_eq!(
            (p.host.as_str(), p.port, p.user.as_str()),
            (c.host, c.port, c.user),
            "{}",
            c.name
        );
        assert_eq!(
            p.password.as_ref().map(|s| s.expose()),
            c.password,
            "{}",
            c.name
        );
        let jump = p
            .jump
            .as_ref()
            .map(|j| (j.host.as_str(), j.port, j.user.as_deref()));
        assert_eq!(jump, c.jump, "{}", c.name);
        assert_eq!(p.identity_file.as_deref(), c.identity, "{}", c.name);
        let kinds: Vec<String> = p.warnings.iter().map(kind).collect();
        for w in c.warns {
            assert!(
                kinds.iter().any(|k| k == w),
                "{}: expected {w} in {kinds:?}",
                c.name
            );
        }
        // The password never shows up in the summary, the warnings or Debug output.
        if let Some(pw) = c.password {
            let shown = format!("{p:?} {:?}", p.summary());
            assert!(!shown.contains(pw), "{}: password leaked: {shown}", c.name);
            assert!(p.summary().has_password);
        }
    }
}

#[test]
fn errors_are_specific() {
    let table: &[(&str, &str)] = &[
        ("", "host_text_empty"),
        ("  \n\t ", "host_text_empty"),
        ("hello, how do I rent a GPU?", "host_not_found"),
        ("ssh -p 0 root@h.example.com", "invalid_port"),
        ("ssh -p 70000 root@h.example.com", "invalid_port"),
        ("ssh -p abc root@h.example.com", "invalid_port"),
        ("ssh -p", "missing_option_value"),
        ("ssh 'root@h.example.com", "unclosed_quote"),
        ("ssh root@-oProxyCommand=x", "invalid_host"),
        ("ssh root@[2001:db8::1", "invalid_host"),
        ("ssh root@[not:v6]", "invalid_host"),
        ("ssh 'ro ot'@h.example.com", "invalid_user"),
        (
            "ssh -J a@b.example.com,c@d.example.com root@h.example.com",
            "jump_chain_unsupported",
        ),
        ("ssh root@主机.example.com", "invalid_host"),
        ("Host: gpu.example.com\nPort: 0", "invalid_port"),
    ];
    for (text, code) in table {
        match parse(text) {
            Err(e) => assert_eq!(e.code(), *code, "{text:?}: {e}"),
            Ok(p) => panic!("{text:?}: expected {code}, got {p:?}"),
        }
    }
    let long = "a".repeat(MAX_TEXT_BYTES + 1);
    assert_eq!(parse(&long).expect_err("long").code(), "host_text_too_long");
}

#[test]
fn summary_serializes_for_the_ui() {
    let p =
        parse("登录指令：ssh -p 38211 root@region-3.example.com 密码：Ab12cd34").expect("parse");
    let json = serde_json::to_value(p.summary()).expect("json");
    assert_eq!(json["host"], "region-3.example.com");
    assert_eq!(json["has_password"], true);
    assert!(!json.to_string().contains("Ab12cd34"));
}
