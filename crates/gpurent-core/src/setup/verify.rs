//! Verify: a GPU check run on the host after the fix (`verify.py`: is_available, names, a timed
//! bf16/fp16 matmul -> achieved TFLOPS, a device-to-device copy -> GB/s, total VRAM), parsed and
//! compared with the catalog's spec for that card. A card far below its spec, or with a different
//! amount of memory, is reported as "this may not be the card you paid for", with the numbers.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::catalog::Catalog;
use crate::infra::error::CoreError;

/// The Python check script (run with the interpreter the fix installed into).
pub const SCRIPT: &str = include_str!("verify.py");

/// Large bf16 GEMMs reach about 60-80 % of a card's dense tensor peak; below half is suspicious.
pub const MIN_TFLOPS_FRACTION: f64 = 0.5;
/// A device-to-device copy reaches about 80-90 % of the memory bandwidth spec.
pub const MIN_BANDWIDTH_FRACTION: f64 = 0.7;
/// Reported memory vs the spec (drivers reserve a little: the L4's 24 GB shows as 22.5 GiB).
pub const VRAM_TOLERANCE: f64 = 0.1;

/// Why a card looks different from its spec.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "key", rename_all = "snake_case")]
pub enum Suspicion {
    SlowMatmul {
        achieved_tflops: f64,
        spec_tflops: f64,
        fraction: f64,
    },
    SlowMemory {
        achieved_gbps: f64,
        spec_gbps: f64,
        fraction: f64,
    },
    VramMismatch {
        reported_gib: f64,
        spec_gb: f64,
    },
    /// The name matches no catalog card: nothing to compare with.
    UnknownCard,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct VerifiedGpu {
    pub index: u32,
    pub name: String,
    pub card_id: Option<String>,
    pub capability: String,
    pub total_memory_gib: Option<f64>,
    pub matmul_dtype: Option<String>,
    pub matmul_tflops: Option<f64>,
    pub spec_tflops: Option<f64>,
    pub copy_gbps: Option<f64>,
    pub spec_gbps: Option<f64>,
    pub suspicions: Vec<Suspicion>,
}

impl VerifiedGpu {
    /// "This may not be the card you paid for."
    pub fn suspect(&self) -> bool {
        self.suspicions
            .iter()
            .any(|s| !matches!(s, Suspicion::UnknownCard))
    }
}

/// Why the GPU check did not pass, typed: the UI translates by `code` and fills in the fields
/// (stable snake_case codes, added never renamed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(tag = "code")]
pub enum VerifyIssue {
    /// `import torch` failed in the interpreter the check ran with (`detail`: the exception).
    #[serde(rename = "verify_torch_import_failed")]
    TorchImportFailed { detail: String },
    /// torch imports, but `torch.cuda.is_available()` is False.
    #[serde(rename = "verify_cuda_unavailable")]
    CudaUnavailable { torch: Option<String> },
    /// The matmul or copy failed on a GPU (`detail`: the exception, e.g. CUDA out of memory).
    #[serde(rename = "verify_gpu_check_failed")]
    GpuCheckFailed {
        gpu_index: Option<u32>,
        detail: String,
    },
    /// The interpreter exited with an error before the check said why (`stderr_line`: its last
    /// line of stderr, e.g. "No such file or directory").
    #[serde(rename = "verify_interpreter_failed")]
    InterpreterFailed {
        python: String,
        exit_status: Option<i32>,
        stderr_line: String,
    },
}

impl VerifyIssue {
    /// The stable code (the serde tag).
    pub fn code(&self) -> &'static str {
        match self {
            VerifyIssue::TorchImportFailed { .. } => "verify_torch_import_failed",
            VerifyIssue::CudaUnavailable { .. } => "verify_cuda_unavailable",
            VerifyIssue::GpuCheckFailed { .. } => "verify_gpu_check_failed",
            VerifyIssue::InterpreterFailed { .. } => "verify_interpreter_failed",
        }
    }

    /// The typed form of one of the script's `error=` lines.
    fn from_script_line(line: &str) -> VerifyIssue {
        if let Some(d) = line.strip_prefix("import torch: ") {
            return VerifyIssue::TorchImportFailed { detail: d.into() };
        }
        if let Some((n, d)) = line
            .strip_prefix("gpu ")
            .and_then(|r| r.split_once(": "))
            .and_then(|(n, d)| Some((n.trim().parse::<u32>().ok()?, d)))
        {
            return VerifyIssue::GpuCheckFailed {
                gpu_index: Some(n),
                detail: d.into(),
            };
        }
        VerifyIssue::GpuCheckFailed {
            gpu_index: None,
            detail: line.into(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct VerifyReport {
    pub torch: Option<String>,
    pub torch_cuda: Option<String>,
    pub cuda_available: bool,
    pub gpus: Vec<VerifiedGpu>,
    /// English text of the problems (as the script printed them; kept for `--json` readers).
    pub errors: Vec<String>,
    /// The same problems typed, with codes and fields: what the UI translates.
    pub issues: Vec<VerifyIssue>,
    /// PyTorch works on every GPU and none looks off.
    pub ok: bool,
}

impl VerifyReport {
    /// Record a problem found outside the script (its English text goes to `errors` too).
    pub fn push_issue(&mut self, issue: VerifyIssue) {
        if let VerifyIssue::InterpreterFailed {
            python,
            exit_status,
            stderr_line,
        } = &issue
        {
            self.errors.push(format!(
                "{python} exited with {exit_status:?}: {stderr_line}"
            ));
        }
        self.issues.push(issue);
        self.ok = false;
    }
}

/// Parse the script's output and compare every GPU with its catalog card.
pub fn parse(raw: &str) -> Result<VerifyReport, CoreError> {
    let cat = Catalog::bundled()?;
    let mut r = VerifyReport::default();
    for line in raw.lines() {
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let f: Vec<&str> = v.split('|').collect();
        let idx = || f.first().and_then(|i| i.trim().parse::<u32>().ok());
        let num = |i: usize| f.get(i).and_then(|x| x.trim().parse::<f64>().ok());
        match k.trim() {
            "torch" => r.torch = Some(v.to_string()),
            "torch_cuda" => r.torch_cuda = Some(v.to_string()).filter(|c| c != "None"),
            "available" => r.cuda_available = v == "True",
            "error" => {
                r.errors.push(v.to_string());
                r.issues.push(VerifyIssue::from_script_line(v));
            }
            "device" if f.len() >= 4 => {
                let name = f[1..f.len() - 2].join("|");
                r.gpus.push(VerifiedGpu {
                    index: idx().unwrap_or(0),
                    card_id: super::cards::match_card(&name, cat.cards()),
                    name,
                    capability: f[f.len() - 2].to_string(),
                    total_memory_gib: f[f.len() - 1]
                        .parse::<f64>()
                        .ok()
                        .map(|b| b / (1u64 << 30) as f64),
                    ..VerifiedGpu::default()
                });
            }
            "matmul" => {
                if let Some(g) = r.gpus.iter_mut().find(|g| Some(g.index) == idx()) {
                    g.matmul_dtype = f.get(1).map(|s| s.to_string());
                    g.matmul_tflops = num(5);
                }
            }
            "copy" => {
                if let Some(g) = r.gpus.iter_mut().find(|g| Some(g.index) == idx()) {
                    g.copy_gbps = num(3);
                }
            }
            _ => {}
        }
    }
    for g in &mut r.gpus {
        let Some(card) = g.card_id.as_ref().and_then(|id| cat.get(id).ok()) else {
            g.suspicions.push(Suspicion::UnknownCard);
            continue;
        };
        g.spec_tflops = card.bf16_dense_tflops.or(card.fp16_dense_tflops_fp16acc);
        g.spec_gbps = Some(card.mem_bw_gbps);
        if let (Some(a), Some(s)) = (g.matmul_tflops, g.spec_tflops) {
            if s > 0.0 && a / s < MIN_TFLOPS_FRACTION {
                g.suspicions.push(Suspicion::SlowMatmul {
                    achieved_tflops: a,
                    spec_tflops: s,
                    fraction: a / s,
                });
            }
        }
        if let Some(a) = g.copy_gbps {
            let s = card.mem_bw_gbps;
            if s > 0.0 && a / s < MIN_BANDWIDTH_FRACTION {
                g.suspicions.push(Suspicion::SlowMemory {
                    achieved_gbps: a,
                    spec_gbps: s,
                    fraction: a / s,
                });
            }
        }
        if let Some(gib) = g.total_memory_gib {
            if (gib - card.vram_gb).abs() > VRAM_TOLERANCE * card.vram_gb {
                g.suspicions.push(Suspicion::VramMismatch {
                    reported_gib: gib,
                    spec_gb: card.vram_gb,
                });
            }
        }
    }
    if r.torch.is_some() && !r.cuda_available {
        r.issues.push(VerifyIssue::CudaUnavailable {
            torch: r.torch.clone(),
        });
    }
    r.ok = r.cuda_available
        && !r.gpus.is_empty()
        && r.errors.is_empty()
        && r.gpus
            .iter()
            .all(|g| g.matmul_tflops.is_some() && !g.suspect());
    Ok(r)
}

/// The interpreter verify runs with: gpurent's venv once made, else the one the probe found.
pub fn best_python(facts: &crate::setup::Facts) -> String {
    facts
        .python
        .gpurent_venv
        .as_ref()
        .map(|v| format!("{}/bin/python", v.trim_end_matches('/')))
        .or_else(|| facts.python.executable.clone())
        .unwrap_or_else(|| "python3".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_healthy_h100_passes_and_a_relabelled_card_is_flagged_with_numbers() {
        // 81559 MiB = 85520809984 bytes; ~700 TFLOPS bf16 and ~2.9 TB/s are typical of an H100 SXM.
        let ok = "verify_version=1\ntorch=2.8.0+cu128\ntorch_cuda=12.8\navailable=True\ndevice=0|NVIDIA H100 80GB HBM3|9.0|85520809984\nmatmul=0|bfloat16|8192|20|0.031400|700.35\ncopy=0|42949672960|0.014800|2902.0\n";
        let r = parse(ok).expect("parse");
        assert!(r.ok, "{r:?}");
        assert_eq!(r.gpus[0].card_id.as_deref(), Some("h100-sxm"));
        assert_eq!(r.gpus[0].spec_tflops, Some(989.4));
        // Sold as a 4090 (165 TF bf16, 1008 GB/s, 24 GB) but performs and measures like a 16 GB card.
        let bad = "torch=2.5.1+cu124\ntorch_cuda=12.4\navailable=True\ndevice=0|NVIDIA GeForce RTX 4090|8.9|17171480576\nmatmul=0|bfloat16|8192|20|0.400000|54.98\ncopy=0|42949672960|0.070000|613.6\n";
        let r = parse(bad).expect("parse");
        assert!(!r.ok);
        let g = &r.gpus[0];
        assert!(g.suspect());
        assert!(g
            .suspicions
            .iter()
            .any(|s| matches!(s, Suspicion::SlowMatmul { fraction, .. } if *fraction < 0.5)));
        assert!(g.suspicions.iter().any(|s| matches!(s, Suspicion::SlowMemory { achieved_gbps, .. } if (*achieved_gbps - 613.6).abs() < 1e-9)));
        assert!(g
            .suspicions
            .iter()
            .any(|s| matches!(s, Suspicion::VramMismatch { spec_gb, .. } if *spec_gb == 24.0)));
    }

    #[test]
    fn unavailable_cuda_and_unknown_cards() {
        let r = parse("verify_version=1\ntorch=2.3.0+cpu\ntorch_cuda=None\navailable=False\n")
            .expect("parse");
        assert!(!r.ok && !r.cuda_available && r.torch_cuda.is_none());
        assert_eq!(
            r.issues,
            vec![VerifyIssue::CudaUnavailable {
                torch: Some("2.3.0+cpu".into())
            }]
        );
        let r = parse("available=True\ndevice=0|NVIDIA TITAN V|7.0|12884901888\nmatmul=0|float16|8192|20|0.1|110.0\n").expect("parse");
        assert_eq!(r.gpus[0].suspicions, vec![Suspicion::UnknownCard]);
        assert!(r.ok, "an unknown card is not suspect, just not compared");
    }

    /// The UI translates verify problems by code: every one is typed, with its fields.
    #[test]
    fn verify_problems_are_typed_with_codes_and_fields() {
        let r = parse(
            "verify_version=1\nerror=import torch: ModuleNotFoundError: No module named 'torch'\n",
        )
        .expect("parse");
        assert_eq!(
            r.issues,
            vec![VerifyIssue::TorchImportFailed {
                detail: "ModuleNotFoundError: No module named 'torch'".into()
            }]
        );
        let r = parse("torch=2.8.0+cu128\navailable=True\ndevice=0|NVIDIA H100 80GB HBM3|9.0|85520809984\nerror=gpu 0: OutOfMemoryError: CUDA out of memory\n").expect("parse");
        assert_eq!(r.issues[0].code(), "verify_gpu_check_failed");
        assert_eq!(
            r.issues[0],
            VerifyIssue::GpuCheckFailed {
                gpu_index: Some(0),
                detail: "OutOfMemoryError: CUDA out of memory".into()
            }
        );
        let mut r = VerifyReport::default();
        r.push_issue(VerifyIssue::InterpreterFailed {
            python: "~/gpurent-venv/bin/python".into(),
            exit_status: Some(127),
            stderr_line: "not found".into(),
        });
        let json = serde_json::to_value(&r.issues[0]).expect("json");
        assert_eq!(json["code"], "verify_interpreter_failed");
        assert_eq!(json["exit_status"], 127);
        assert_eq!(json["python"], "~/gpurent-venv/bin/python");
        assert!(!r.ok);
    }

    #[test]
    fn the_script_prints_what_the_parser_reads() {
        for k in [
            "verify_version",
            "\"torch\"",
            "\"available\"",
            "\"device\"",
            "\"matmul\"",
            "\"copy\"",
            "\"error\"",
        ] {
            assert!(SCRIPT.contains(k), "{k}");
        }
    }
}
