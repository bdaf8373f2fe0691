//! "Explain this error" in the real app: a launch through the fake `torchrun` on a saved host of
//! the loopback sshd whose script dies of a CUDA OOM (a real-shaped traceback on stderr, exit 1)
//! is explained on the Run tab without asking, in English and in Chinese; the Setup step's
//! Explain field answers a pasted log with no host (a match, and "not recognised" with the
//! suspicious lines).
//!
//! Run: `cargo build -p gpurent-app -p gpurent-cli && bash scripts/e2e.sh explain`.

mod harness;

use std::path::{Path, PathBuf};

use harness::{add_key_and_host, Session};

fn fakegpu_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/gpurent-core/tests/fakegpu")
}

/// A training script that dies as PyTorch 2.x does when the batch does not fit: progress on
/// stdout, the traceback on stderr, exit 1 (each rank).
const OOM_SCRIPT: &str = r#"import os, sys
rank = os.environ["RANK"]
print(f"[train] rank {rank}: loading model meta-llama/Llama-3.1-8B (bf16)", flush=True)
print(f"[train] rank {rank}: epoch 0 step 0 batch_size=32 seq_len=4096", flush=True)
sys.stderr.write('''Traceback (most recent call last):
  File "/root/train.py", line 42, in <module>
    loss = model(**batch).loss
  File "/usr/local/lib/python3.10/dist-packages/torch/nn/modules/module.py", line 1736, in _wrapped_call_impl
    return self._call_impl(*args, **kwargs)
  File "/usr/local/lib/python3.10/dist-packages/transformers/models/llama/modeling_llama.py", line 1190, in forward
    logits = self.lm_head(hidden_states)
  File "/usr/local/lib/python3.10/dist-packages/torch/nn/modules/linear.py", line 125, in forward
    return F.linear(input, self.weight, self.bias)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.91 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.02 GiB is free. Process 4242 has 78.07 GiB memory in use. Of the allocated memory 75.30 GiB is allocated by PyTorch, and 1.25 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)
''')
sys.exit(1)
"#;

/// Lines typed into a text area (WebDriver types Enter, not "\n", as a line break).
fn lines(l: &[&str]) -> String {
    l.join("\u{E007}")
}

#[tokio::test]
async fn explain_a_failed_launch_with_a_cuda_oom_in_en_and_zh() {
    if !gpurent_testhost::sshd_available() {
        return;
    }
    let host =
        gpurent_testhost::fakegpu::FakeHost::new(&fakegpu_dir(), "ready_h100").expect("fake host");
    let sshd = host.serve().expect("serve");
    let script = host.dir.path().join("home/train.py");
    std::fs::write(&script, OOM_SCRIPT).expect("script");

    let s = Session::start().await;
    s.wait_css("body[data-ready='true']").await;
    add_key_and_host(&s, &sshd, "gpu1").await;

    // The launch fails (torchrun exits 1); its log is explained without asking: the OOM first.
    s.click("#nav-monitor").await;
    s.click("#monitor-tab-run").await;
    s.fill("#launch-script", &script.display().to_string())
        .await;
    s.fill("#launch-nproc", "2").await;
    s.click("#launch-run").await;
    s.wait_css("#launch-result p[data-status='1']").await;
    let first = "#launch-result .explain-match";
    s.wait_css(first).await;
    assert_eq!(s.attr(first, "data-code").await, "cuda_out_of_memory");
    // Nothing else fires on it (not torchrun's ChildFailedError summary, not the traceback).
    assert_eq!(
        s.attr("#launch-result .explain-result", "data-matches")
            .await,
        "1"
    );
    let title = s.text(&format!("{first} .finding-title")).await;
    assert!(title.contains("CUDA out of memory"), "{title}");
    let evidence = s.text(&format!("{first} details.evidence pre")).await;
    assert!(
        evidence.contains("Tried to allocate 3.91 GiB"),
        "{evidence}"
    );
    s.scroll_to(first).await;
    s.screenshot("explain-launch-en").await;
    // The Explain button under a rank's log answers the same for that rank alone.
    // Rank 0 failed first; like torch.distributed.elastic, the fake torchrun then TERMs rank 1.
    let rank1 = "#launch-logs .rank:has(pre[data-rank='0'])";
    s.click(&format!("{rank1} .explain-button")).await;
    s.wait_css(&format!(
        "{rank1} .explain-inline .explain-match[data-code='cuda_out_of_memory']"
    ))
    .await;
    // The answer stays when the Run tab redraws (a failing Jupyter start notifies it).
    s.fill("#jupyter-python", "/nonexistent/python3").await;
    s.click("#jupyter-open").await;
    s.wait_css("#banner:not([hidden]) .error-text").await;
    s.wait_css("#jupyter-open:not([disabled])").await;
    assert_eq!(
        s.count(&format!(
            "{rank1} .explain-inline .explain-match[data-code='cuda_out_of_memory']"
        ))
        .await,
        1
    );

    // The Setup step's field, no host: a pasted OOM line is recognised (and says what a host
    // would add); an unknown error is "not recognised" with the lines that look like it.
    s.click("#nav-setup").await;
    s.click("#explain summary").await;
    s.select("#explain-host", "").await;
    s.fill(
        "#explain-text",
        &lines(&[
            "step 10 loss 2.31",
            "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB",
        ]),
    )
    .await;
    s.click("#explain-run").await;
    s.wait_css("#explain-out .explain-match[data-code='cuda_out_of_memory']")
        .await;
    s.scroll_to("#explain-out").await;
    s.screenshot("explain-setup-match-en").await;
    s.fill(
        "#explain-text",
        &lines(&[
            "loading shards 3/4",
            "ValueError: frobnicator 7 is not calibrated",
            "step 0 done",
        ]),
    )
    .await;
    s.click("#explain-run").await;
    s.wait_css("#explain-out [data-unrecognised='true']").await;
    let unknown = s.text("#explain-out [data-unrecognised='true']").await;
    assert!(unknown.contains("(lines read: 3)"), "{unknown}");
    let suspicious = s.text("#explain-out pre").await;
    assert!(
        suspicious.contains("ValueError: frobnicator 7 is not calibrated"),
        "{suspicious}"
    );
    s.scroll_to("#explain-out").await;
    s.screenshot("explain-setup-unrecognised-en").await;

    // The same explanation in Chinese.
    s.click("#rail-settings").await;
    s.select("#settings-language", "zh-CN").await;
    s.wait_text("h1", "设置").await;
    s.click("#nav-monitor").await;
    s.click("#monitor-tab-run").await;
    s.wait_css(first).await;
    assert_eq!(s.attr(first, "data-code").await, "cuda_out_of_memory");
    let title = s.text(&format!("{first} .finding-title")).await;
    assert!(title.contains("显存不足"), "{title}");
    s.scroll_to(first).await;
    s.screenshot("explain-launch-zh-CN").await;
    s.finish().await;
}
