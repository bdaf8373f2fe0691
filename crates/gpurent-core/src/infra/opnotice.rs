//! "A long step finished": whether an operation that just ended deserves an OS notification,
//! and its words. Pure (times passed in); the desktop shell registers a hook with
//! [`crate::app::App::on_op_end`], which `App::run_op` calls where every operation ends, and
//! shows what [`long_op_notice`] returns.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::infra::settings::Language;

/// Notify when an operation ran at least this long.
pub const LONG_OP_MS: i64 = 60_000;

/// The operations that finish by themselves (a transfer, a setup fix or verify, a rent, a model
/// pull, an install, a launched run). Operations that run until the user stops them (monitor
/// watch, `ollama serve`, a chat, a tunnel, Jupyter) or that are short checks are not here.
pub const NOTIFIED_KINDS: &[&str] = &[
    "transfer_put",
    "transfer_get",
    "transfer_resume",
    "setup_fix",
    "setup_verify",
    "rent",
    "ollama_pull",
    "ollama_install",
    "launch_run",
];

/// An operation that ended, as `run_op` saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpEnded {
    pub op_id: String,
    pub kind: String,
    pub started_ms: i64,
    pub ended_ms: i64,
    /// `ok` or the error's code.
    pub outcome: String,
    /// The user cancelled or paused it (its token says so).
    pub cancelled: bool,
}

/// What to tell the user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct OpNotice {
    pub kind: String,
    pub ok: bool,
    /// The error code when it failed.
    pub code: Option<String>,
    pub minutes: i64,
    pub seconds: i64,
}

/// Notify or not: a finished operation of a notified kind that ran at least `threshold_ms`;
/// never one the user cancelled or paused (they know).
pub fn long_op_notice(e: &OpEnded, threshold_ms: i64) -> Option<OpNotice> {
    let ran = e.ended_ms - e.started_ms;
    let by_user = e.cancelled || matches!(e.outcome.as_str(), "cancelled" | "paused");
    if by_user || ran < threshold_ms || !NOTIFIED_KINDS.contains(&e.kind.as_str()) {
        return None;
    }
    let ok = e.outcome == "ok";
    Some(OpNotice {
        kind: e.kind.clone(),
        ok,
        code: (!ok).then(|| e.outcome.clone()),
        minutes: ran / 60_000,
        seconds: (ran / 1000) % 60,
    })
}

fn kind_name(kind: &str, zh: bool) -> &'static str {
    match (kind, zh) {
        ("transfer_put", false) => "Upload",
        ("transfer_get", false) => "Download",
        ("transfer_resume", false) => "Resumed transfer",
        ("setup_fix", false) => "Setup fix",
        ("setup_verify", false) => "Setup check",
        ("rent", false) => "Renting the machine",
        ("ollama_pull", false) => "Model download",
        ("ollama_install", false) => "Ollama install",
        ("launch_run", false) => "Run",
        (_, false) => "Operation",
        ("transfer_put", true) => "上传",
        ("transfer_get", true) => "下载",
        ("transfer_resume", true) => "续传",
        ("setup_fix", true) => "环境修复",
        ("setup_verify", true) => "环境检查",
        ("rent", true) => "租用机器",
        ("ollama_pull", true) => "模型下载",
        ("ollama_install", true) => "Ollama 安装",
        ("launch_run", true) => "运行",
        (_, true) => "操作",
    }
}

/// The OS notification's title and body, in the app's language.
pub fn op_notice_text(lang: Language, n: &OpNotice) -> (String, String) {
    let zh = lang == Language::ZhCn;
    let name = kind_name(&n.kind, zh);
    let took = match (n.minutes, zh) {
        (0, false) => format!("{} s", n.seconds),
        (m, false) => format!("{m} min {} s", n.seconds),
        (0, true) => format!("{} 秒", n.seconds),
        (m, true) => format!("{m} 分 {} 秒", n.seconds),
    };
    let code = n.code.clone().unwrap_or_default();
    match (n.ok, zh) {
        (true, false) => (
            format!("{name} finished"),
            format!("It took {took}. Back to gpurent for the next step."),
        ),
        (false, false) => (
            format!("{name} failed"),
            format!("After {took}: {code}. Open gpurent to see what to do."),
        ),
        (true, true) => (
            format!("{name}已完成"),
            format!("用时 {took}。回到 gpurent 继续下一步。"),
        ),
        (false, true) => (
            format!("{name}失败"),
            format!("{took}后出错：{code}。打开 gpurent 查看处理方法。"),
        ),
    }
}

/// What `App::run_op` calls when an operation ends (with the app's language).
pub type OpEndFn = dyn Fn(&OpEnded, Language) + Send + Sync;

/// The hook the shell registers (none in the CLI and tests unless they set one).
#[derive(Default, Clone)]
pub struct OpEndHook(pub Option<Arc<OpEndFn>>);

impl std::fmt::Debug for OpEndHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "OpEndHook(set)"
        } else {
            "OpEndHook(none)"
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ended(kind: &str, secs: i64, outcome: &str, cancelled: bool) -> OpEnded {
        OpEnded {
            op_id: "op-1".into(),
            kind: kind.into(),
            started_ms: 1_000_000,
            ended_ms: 1_000_000 + secs * 1000,
            outcome: outcome.into(),
            cancelled,
        }
    }

    /// Notified: ok, and the error code when it failed.
    type Want = Option<(bool, Option<&'static str>)>;

    /// Table: each row an operation that ended, and whether (and how) it is notified.
    #[test]
    fn notify_or_not() {
        let rows: Vec<(&str, OpEnded, Want)> = vec![
            (
                "a 59 s upload: short",
                ended("transfer_put", 59, "ok", false),
                None,
            ),
            (
                "a 60 s upload",
                ended("transfer_put", 60, "ok", false),
                Some((true, None)),
            ),
            (
                "a long model pull that failed",
                ended("ollama_pull", 300, "ssh_connection_lost", false),
                Some((false, Some("ssh_connection_lost"))),
            ),
            (
                "a long download the user cancelled",
                ended("transfer_get", 600, "cancelled", true),
                None,
            ),
            (
                "cancelled, whatever the code it ended with",
                ended("setup_fix", 600, "ssh_command_failed", true),
                None,
            ),
            (
                "paused by the user",
                ended("transfer_get", 600, "paused", false),
                None,
            ),
            (
                "a rent",
                ended("rent", 120, "ok", false),
                Some((true, None)),
            ),
            (
                "setup verify",
                ended("setup_verify", 90, "ok", false),
                Some((true, None)),
            ),
            (
                "monitor watch runs until stopped: never",
                ended("monitor_watch", 3600, "ok", false),
                None,
            ),
            (
                "a chat: never",
                ended("ollama_chat", 3600, "ok", false),
                None,
            ),
        ];
        for (name, e, want) in rows {
            let got = long_op_notice(&e, LONG_OP_MS);
            assert_eq!(
                got.as_ref().map(|n| (n.ok, n.code.as_deref())),
                want,
                "{name}"
            );
            if let Some(n) = got {
                assert_eq!(n.kind, e.kind);
            }
        }
    }

    #[test]
    fn words_in_both_languages() {
        let n =
            long_op_notice(&ended("transfer_get", 125, "ok", false), LONG_OP_MS).expect("notified");
        assert_eq!((n.minutes, n.seconds), (2, 5));
        assert_eq!(
            op_notice_text(Language::En, &n),
            (
                "Download finished".to_string(),
                "It took 2 min 5 s. Back to gpurent for the next step.".to_string()
            )
        );
        assert_eq!(op_notice_text(Language::ZhCn, &n).0, "下载已完成");
        let f = long_op_notice(&ended("ollama_pull", 61, "disk_full", false), LONG_OP_MS)
            .expect("notified");
        let (t, b) = op_notice_text(Language::En, &f);
        assert_eq!(t, "Model download failed");
        assert!(b.contains("disk_full") && b.contains("1 min 1 s"), "{b}");
        let (t, b) = op_notice_text(Language::ZhCn, &f);
        assert_eq!(t, "模型下载失败");
        assert!(b.contains("disk_full"), "{b}");
    }
}
