use super::*;

fn c() -> &'static Compat {
    Compat::bundled().expect("bundled compat data parses")
}
fn v(s: &str) -> Ver {
    Ver::parse(s).expect(s)
}

/// Every row's values, compared with lines written from the research snapshot's CSVs
/// (`reference_rows.txt`), not just how many rows there are.
#[test]
fn every_row_of_the_reference_is_transcribed() {
    let want = include_str!("reference_rows.txt");
    let want: Vec<&str> = want.lines().filter(|l| !l.starts_with('#')).collect();
    let opt = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    let mut got: Vec<String> = Vec::new();
    for w in c().wheels() {
        got.push(format!(
            "wheel|{}|{}|{}|{}-{}|{}|{}|{}|{}",
            w.torch,
            w.variant,
            w.cuda,
            w.python_min,
            w.python_max,
            w.torchvision,
            opt(w.torchaudio.clone()),
            if w.pypi_default { "yes" } else { "no" },
            w.pip_command
        ));
    }
    for r in c().cuda_releases() {
        got.push(format!(
            "cuda|{}|{}|{}|{}",
            r.cuda,
            r.release,
            opt(r.linux_min_driver.as_ref().map(Ver::to_string)),
            opt(r.driver_branch.clone())
        ));
    }
    for a in c().arches() {
        let ccs: Vec<String> = a.ccs.iter().map(|(x, y)| format!("{x}.{y}")).collect();
        got.push(format!(
            "arch|{}|{}|{}",
            ccs.join(";"),
            a.architecture,
            a.sm
        ));
    }
    // Same rows and values; the data file's order is its own.
    // Driver versions compare as numbers (450.36.06 == 450.36.6).
    let mut want: Vec<String> = want
        .iter()
        .map(|l| {
            let mut f: Vec<String> = l.split('|').map(String::from).collect();
            if f[0] == "cuda" {
                if let Some(d) = Ver::parse(&f[3]) {
                    f[3] = d.to_string();
                }
            }
            f.join("|")
        })
        .collect();
    got.sort();
    want.sort();
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g, w);
    }
    assert_eq!(got.len(), want.len());
    assert_eq!(c().newest_torch(), Some(&v("2.14.0")));
    assert_eq!(c().newest_cuda(), Some(CudaVer::new(13, 5)));
}

#[test]
fn toolkit_to_minimum_driver_and_minor_compat_floors() {
    let r = c().min_driver(CudaVer::new(12, 8));
    assert_eq!(r.min_driver, Some(v("570.26")));
    assert_eq!(r.branch.as_deref(), Some("R570"));
    // 13.4: NVIDIA lists only the branch.
    let r = c().min_driver(CudaVer::new(13, 4));
    assert_eq!(
        (r.min_driver, r.branch.as_deref(), r.known),
        (None, Some("R615"), true)
    );
    // Newer than the data: flagged as unknown, not a panic.
    assert!(!c().min_driver(CudaVer::new(14, 0)).known);
    assert_eq!(c().minor_compat_floor(12), Some(v("525.60.13")));
    assert_eq!(c().minor_compat_floor(11), Some(v("450.80.02")));
    assert_eq!(c().minor_compat_floor(13), Some(v("580.65.06")));
    assert_eq!(
        c().cuda_for_driver(&v("550.54.15")),
        Some(CudaVer::new(12, 4))
    );
    assert_eq!(
        c().cuda_for_driver(&v("470.239.06")),
        Some(CudaVer::new(11, 4))
    );
    // The branch is a floor too: R615 runs 13.4, which NVIDIA lists by branch only.
    assert_eq!(
        c().cuda_for_driver(&v("610.43.02")),
        Some(CudaVer::new(13, 3))
    );
    assert_eq!(c().cuda_for_driver(&v("615.10")), Some(CudaVer::new(13, 4)));
    // A driver newer than the data maps to the newest CUDA whose driver requirement is known
    // (13.4); 13.5's is unverified, so it is not claimed.
    assert_eq!(c().cuda_for_driver(&v("999.1")), Some(CudaVer::new(13, 4)));
}

#[test]
fn driver_runs_wheel_per_the_check_order() {
    let s = |w: (u32, u32), d: (u32, u32), drv: &str| {
        c().run_support(
            CudaVer::new(w.0, w.1),
            CudaVer::new(d.0, d.1),
            Ver::parse(drv).as_ref(),
        )
    };
    assert_eq!(s((12, 1), (12, 4), "550.54.15"), RunSupport::Native);
    assert_eq!(s((12, 8), (12, 2), "535.171.04"), RunSupport::MinorCompat);
    assert_eq!(s((13, 0), (12, 8), "570.124.06"), RunSupport::No);
    assert_eq!(s((12, 1), (11, 4), "470.239.06"), RunSupport::No);
    assert_eq!(s((11, 8), (11, 0), "450.51.06"), RunSupport::No);
    assert_eq!(s((11, 8), (11, 4), "470.82.01"), RunSupport::MinorCompat);
    // A driver newer than the data reports a CUDA newer than every wheel: native.
    assert_eq!(s((13, 2), (14, 1), "700.1"), RunSupport::Native);
}

#[test]
fn architecture_coverage_uses_sass_within_a_major_and_ptx_above() {
    let w = |t: &str, var: &str| c().wheel(&v(t), var).expect("wheel").arch_list.clone();
    // Ada (8.9) runs the sm_86 SASS of any cu12x wheel.
    assert_eq!(arch_runs(&w("2.3.0", "cu121"), (8, 9)), Some(false));
    // RTX 5090 (12.0) has no kernels in cu126; cu128 of 2.7 has sm_120.
    assert_eq!(arch_runs(&w("2.9.0", "cu126"), (12, 0)), None);
    assert_eq!(arch_runs(&w("2.7.0", "cu128"), (12, 0)), Some(false));
    // Pascal on cu128+ is gone; Hopper never crossed majors.
    assert_eq!(arch_runs(&w("2.8.0", "cu128"), (6, 1)), None);
    assert_eq!(arch_runs(&w("1.13.1", "cu117"), (9, 0)), None);
    // A future 13.x GPU is reached only through compute_120 PTX.
    assert_eq!(arch_runs(&w("2.14.0", "cu130"), (13, 0)), Some(true));
    assert_eq!(
        c().first_wheel_for((12, 0))
            .map(|w| (w.torch.to_string(), w.variant.as_str())),
        Some(("2.7.0".into(), "cu128"))
    );
    assert_eq!(
        c().first_wheel_for((9, 0))
            .map(|w| (w.torch.to_string(), w.variant.as_str())),
        Some(("2.0.0".into(), "cu118"))
    );
    let ada = c().arch((8, 9)).expect("8.9");
    assert_eq!(ada.architecture, "Ada Lovelace");
    assert_eq!(ada.min_cuda, Some(CudaVer::new(11, 8)));
    assert_eq!(
        c().arch((5, 2)).map(|a| a.architecture.as_str()),
        Some("Maxwell")
    );
    assert!(c().arch((15, 0)).is_none());
}

#[test]
fn wheels_carry_python_ranges_and_exact_commands() {
    let w = c().wheel(&v("2.3.0"), "cu121").expect("2.3.0");
    assert!(w.supports_python(&v("3.12.4")));
    assert!(!w.supports_python(&v("3.13.1")));
    assert_eq!(w.pip_command, "pip install torch==2.3.0 torchvision==0.18.0 torchaudio==2.3.0 --index-url https://download.pytorch.org/whl/cu121");
    let w = c().wheel(&v("2.14.0"), "cu130").expect("2.14.0");
    assert_eq!(w.torchaudio, None);
    assert!(w.pypi_default);
    assert!(c().is_newer_torch(&v("2.15.0")));
    assert!(!c().is_newer_torch(&v("2.14.0")));
}

#[test]
fn torch_arch_lists_are_read_from_get_arch_list() {
    let items: Vec<String> = ["sm_75", "sm_90a", "sm_120", "compute_120", "junk"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let l = arch_list_from_torch(&items);
    assert_eq!(l.len(), 2);
    assert_eq!(arch_runs(&l, (12, 0)), Some(false));
    assert_eq!(arch_runs(&l, (12, 1)), Some(false));
    assert_eq!(arch_runs(&l, (9, 0)), None);
}
