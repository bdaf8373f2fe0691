//! `gpurent recipe run NAME --provider P --offer ID` against the fake RunPod behind Prism's
//! validating proxy (as `providers_cli.rs`): the price is confirmed as `gpurent rent` confirms it
//! (nothing is created without `--yes` off a terminal), the rent boots the recipe's image for the
//! CUDA line the offer's host runs (the fake's offers list host CUDA 12.8: ComfyUI's cuda12.8
//! image, never its cuda13.0 one), then the flow goes on to Setup on the rented machine (here a
//! bare loopback sshd with no GPU: it stops there, with the step named).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use gpurent_testhost::fakecloud::{FakeCloud, Flavor, SshTarget};
use gpurent_testhost::{prism_available, sshd_available, Prism, Sshd, UserKey};

const API_KEY: &str = "fake-runpod-key-123";

struct Rig {
    sshd: Sshd,
    fake: FakeCloud,
    prism: Prism,
    key_file: PathBuf,
    _keys: tempfile::TempDir,
}

fn rig() -> Option<Rig> {
    if !sshd_available() || !prism_available() {
        eprintln!("recipe_rent_cli: skipped (needs sshd and prism)");
        return None;
    }
    let sshd = Sshd::start().expect("sshd");
    let key = UserKey::generate("gpurent-recipe-rent").expect("key");
    sshd.authorize(&key.public_line).expect("authorize");
    let keys = tempfile::tempdir().expect("tmp");
    let key_file = keys.path().join("id_ed25519");
    std::fs::write(&key_file, &key.private_pem).expect("write key");
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    std::fs::write(
        keys.path().join("id_ed25519.pub"),
        format!("{}\n", key.public_line),
    )
    .expect("pub");
    let fake = FakeCloud::start(Flavor::Runpod, API_KEY).expect("fake cloud");
    fake.set_ssh(SshTarget {
        host: sshd.host().to_string(),
        port: sshd.port(),
        user: sshd.user().to_string(),
    });
    let spec = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../gpurent-core/tests/provider-specs/runpod-rest-v2.openapi.json");
    let prism = Prism::proxy(&spec, &fake.url()).expect("prism proxy");
    Some(Rig {
        sshd,
        fake,
        prism,
        key_file,
        _keys: keys,
    })
}

fn gpurent(rig: &Rig, home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gpurent"))
        .arg("--data-dir")
        .arg(home.join("data"))
        .args(args)
        .env_remove("GPURENT_HOME")
        .env_remove("SSH_AUTH_SOCK")
        .env_remove("GPURENT_TEST_CRASH_AT")
        .env("HOME", home)
        .env("GPURENT_RUNPOD_API_KEY", API_KEY)
        .env("GPURENT_RUNPOD_API_URL", rig.prism.url())
        .env("GPURENT_RUNPOD_SSH_USER", rig.sshd.user())
        .env("GPURENT_RUNPOD_SSH_PORT", rig.sshd.port().to_string())
        // 30 s: no request here is meant to time out (a loaded machine could reach 4 s).
        .env("GPURENT_HTTP_TIMEOUT_S", "30")
        .stdin(Stdio::null())
        .output()
        .expect("run gpurent")
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not one JSON document ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn a_recipe_rents_its_image_for_the_offers_cuda_line_after_the_price_is_confirmed() {
    let Some(rig) = rig() else { return };
    let home = tempfile::tempdir().expect("home");
    let h = home.path();
    let offer = rig.fake.offer_id();
    let key = rig.key_file.to_str().expect("utf8").to_string();
    let base = [
        "recipe",
        "run",
        "comfyui",
        "--provider",
        "runpod",
        "--offer",
        offer.as_str(),
        "-i",
        key.as_str(),
        "--json",
    ];

    // No --yes off a terminal: the rent step asks, nothing is created.
    let out = gpurent(&rig, h, &base);
    assert!(!out.status.success(), "{out:?}");
    let v = json(&out);
    assert_eq!(v["step"], "rent", "{v}");
    assert_eq!(v["error"]["code"], "confirmation_required", "{v}");
    assert_eq!(rig.fake.creates_total(), 0, "created without a yes");

    let mut args = base.to_vec();
    args.push("--yes");
    let out = gpurent(&rig, h, &args);
    let v = json(&out);
    assert_eq!(rig.fake.creates_total(), 1, "{v}");
    // The rent step is done; the flow went on to Setup on the rented machine (a bare sshd here:
    // no GPU, no PyTorch — it stops at Setup with that step's own error).
    assert_eq!(v["step"], "setup", "{v}");
    assert!(v["error"]["code"].as_str().is_some(), "{v}");
    let list = json(&gpurent(&rig, h, &["instances", "--json"]));
    assert_eq!(
        list["instances"][0]["image"], "runpod/comfyui:cuda12.8",
        "the image of the CUDA line the host runs: {list}"
    );
    let id = list["instances"][0]["id"].as_str().expect("id").to_string();
    let rel = gpurent(&rig, h, &["release", &id, "--yes", "--json"]);
    assert!(rel.status.success(), "{rel:?}");
    rig.prism.assert_spec_kept("RunPod");
}
