//! The WebView's drawing path on Linux (docs/monitor.md, "End to end"). WebKitGTK composites the
//! page with OpenGL; where the machine has no GPU device (a VM, a remote desktop, Xvfb) that
//! OpenGL is Mesa's software rasteriser (llvmpipe), and each repaint then costs several times
//! what WebKit's own CPU painting costs — measured with the Monitor drawing 8 hosts once a second:
//! WebKit at 11–14 % of one core composited through llvmpipe (two thirds of it in llvmpipe's
//! threads), 3.2–3.6 % not composited. So without a GPU device the app asks WebKit for its
//! non-composited path (`WEBKIT_DISABLE_COMPOSITING_MODE=1`, read by WebKitGTK when the WebView
//! is created); with one, nothing changes. A value the user already set (`0` keeps compositing)
//! is left alone.

use std::ffi::OsStr;

/// The WebKitGTK switch.
pub const VAR: &str = "WEBKIT_DISABLE_COMPOSITING_MODE";

/// Whether a GPU device node is among `names`: the entries of `/dev` and of `/dev/dri` (a DRM
/// render or card node, any vendor's; NVIDIA's proprietary `/dev/nvidiaN`, which may come
/// without a DRM node).
pub fn gpu_device_among<'a>(names: impl IntoIterator<Item = &'a str>) -> bool {
    names.into_iter().any(|n| {
        n.starts_with("renderD")
            || n.strip_prefix("card")
                .is_some_and(|r| !r.is_empty() && r.bytes().all(|b| b.is_ascii_digit()))
            || n.strip_prefix("nvidia")
                .is_some_and(|r| !r.is_empty() && r.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// Whether to switch compositing off: the user did not choose (`already` unset) and no GPU device.
pub fn disable_compositing(already: Option<&OsStr>, gpu_device: bool) -> bool {
    already.is_none() && !gpu_device
}

/// The entries of `/dev` and `/dev/dri` (none where a folder cannot be read).
#[cfg(target_os = "linux")]
fn dev_names() -> Vec<String> {
    ["/dev", "/dev/dri"]
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|rd| rd.flatten())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// Decide and set the switch; call first thing, before any thread starts (it sets the process
/// environment). Returns whether it switched compositing off (logged once logging is up).
pub fn apply() -> bool {
    #[cfg(target_os = "linux")]
    {
        let names = dev_names();
        let gpu = gpu_device_among(names.iter().map(String::as_str));
        if disable_compositing(std::env::var_os(VAR).as_deref(), gpu) {
            std::env::set_var(VAR, "1");
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gpu_device_is_a_drm_node_or_an_nvidia_node() {
        assert!(gpu_device_among(["null", "renderD128"]));
        assert!(gpu_device_among(["card0"]));
        assert!(gpu_device_among(["nvidiactl", "nvidia0"]));
        // Neither a DRM node nor a GPU: the NVIDIA control and UVM nodes alone, a sound card's
        // name, a folder named like the prefix.
        assert!(!gpu_device_among([
            "null",
            "tty0",
            "nvidiactl",
            "nvidia-uvm",
            "cardreader",
            "card",
            "dri"
        ]));
        assert!(!gpu_device_among(std::iter::empty()));
    }

    #[test]
    fn compositing_goes_off_only_without_a_gpu_and_without_the_users_choice() {
        assert!(disable_compositing(None, false), "no GPU, not set: off");
        assert!(!disable_compositing(None, true), "a GPU: unchanged");
        assert!(
            !disable_compositing(Some(OsStr::new("0")), false),
            "the user's 0 keeps compositing"
        );
        assert!(!disable_compositing(Some(OsStr::new("1")), true));
    }
}
