//! Async Tauri commands run on the async runtime's few worker threads: a command that calls the
//! keychain, starts a process (`ssh-add`, a terminal), asks NVML, or touches the network or the
//! user's files there stalls every other command. Such calls go through
//! `commands::ops::blocking`.
//!
//! The commands checked are the ones registered in `lib.rs`'s `generate_handler!` (so a new
//! command cannot be missed). A handler may call the core straight on `state.app()?` only for a
//! call listed in [`ON_THE_RUNTIME`] — memory, bundled data, the local database or settings file;
//! any other direct call fails here until it is moved into `blocking` (or, when it truly does not
//! block, listed with its reason).

use std::path::Path;

/// Core calls a handler may make on the async runtime, and why they do not block.
const ON_THE_RUNTIME: &[(&str, &str)] = &[
    ("catalog_list", "bundled data"),
    ("catalog_card", "bundled data"),
    ("estimate", "bundled data, pure"),
    ("kind_estimate", "bundled data, pure"),
    ("kind_catalog", "bundled data"),
    ("models", "bundled data"),
    ("quant_formats", "bundled data"),
    ("prices", "local database"),
    ("price_set", "local database"),
    ("price_delete", "local database"),
    ("transfer_list", "local database"),
    ("guard_duration", "pure parse"),
    ("host_list", "local database"),
    ("host_paste_preview", "pure parse"),
    ("key_lock", "forgets unlocked keys in memory"),
    ("cancel_op", "memory"),
    ("pause_op", "memory"),
    ("provider_list", "local database (no keychain read)"),
    ("instance_money", "local database"),
    ("rent_options", "bundled data"),
    ("settings_view", "memory"),
    ("settings_set", "the settings file"),
    ("recipe_list", "bundled data"),
];

/// The names in `generate_handler![...]`: `(module, command)`.
fn registered(lib: &str) -> Vec<(String, String)> {
    let start = lib
        .find("generate_handler![")
        .expect("lib.rs registers its commands with generate_handler!");
    let body = &lib[start + "generate_handler![".len()..];
    let body = &body[..body.find(']').expect("generate_handler! closes")];
    body.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| {
            let parts: Vec<&str> = p.split("::").collect();
            assert!(
                parts.len() == 3 && parts[0] == "commands",
                "a registered command outside commands/<module>: {p}"
            );
            (parts[1].to_string(), parts[2].to_string())
        })
        .collect()
}

/// The source of `fn name(` in `src` up to the next command (or the end of the file).
fn handler<'a>(src: &'a str, name: &str) -> Option<&'a str> {
    let at = [format!("async fn {name}("), format!("pub fn {name}(")]
        .iter()
        .find_map(|p| src.find(p.as_str()))?;
    let rest = &src[at..];
    let end = rest[1..]
        .find("#[tauri::command]")
        .map(|e| e + 1)
        .unwrap_or(rest.len());
    Some(&rest[..end])
}

/// The direct core calls on `state.app()?` in a handler's source; `Err` for `state.app()?` bound
/// to a name (its calls could not be checked).
fn direct_calls(body: &str) -> Result<Vec<String>, String> {
    let flat: String = body.chars().filter(|c| !c.is_whitespace()).collect();
    let mut out = Vec::new();
    for (i, _) in flat.match_indices("state.app()?") {
        let rest = &flat[i + "state.app()?".len()..];
        let Some(rest) = rest.strip_prefix('.') else {
            return Err("state.app()? is kept in a variable".into());
        };
        out.push(
            rest.chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect(),
        );
    }
    Ok(out)
}

#[test]
fn every_registered_command_keeps_blocking_calls_off_the_async_runtime() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(root.join("lib.rs")).expect("lib.rs");
    let commands = registered(&lib);
    assert!(commands.len() > 50, "found {} commands", commands.len());
    let mut bad = Vec::new();
    let mut direct = 0;
    for (module, name) in &commands {
        let path = root.join("commands").join(format!("{module}.rs"));
        let src =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let Some(body) = handler(&src, name) else {
            bad.push(format!("{module}::{name}: its handler was not found"));
            continue;
        };
        if !body.contains("async fn") && body.contains("state") {
            bad.push(format!(
                "{module}::{name}: a synchronous command runs on the main thread"
            ));
        }
        match direct_calls(body) {
            Err(why) => bad.push(format!("{module}::{name}: {why}")),
            Ok(calls) => {
                for call in calls {
                    direct += 1;
                    if !ON_THE_RUNTIME.iter().any(|(c, _)| *c == call) {
                        bad.push(format!("{module}::{name}: {call}"));
                    }
                }
            }
        }
    }
    assert!(direct > 0, "the pattern still matches the sources");
    assert!(
        bad.is_empty(),
        "core calls on the async runtime that may block (wrap them in ops::blocking, or list a \
         call that truly does not block in ON_THE_RUNTIME): {bad:?}"
    );
}

/// The parser sees what lib.rs registers and what a handler calls.
#[test]
fn the_parsers_read_the_shapes_they_check() {
    let lib =
        "x.invoke_handler(tauri::generate_handler![\n commands::a::one,\n commands::b::two,\n])";
    assert_eq!(
        registered(lib),
        [("a".into(), "one".into()), ("b".into(), "two".into())]
    );
    let src = "#[tauri::command]\npub async fn one(state: S) -> R {\n    state.app()?\n        .provider_remove(&n)\n}\n#[tauri::command]\npub async fn two(state: S) { let a = state.app()?; }\n";
    let one = handler(src, "one").expect("one");
    assert_eq!(direct_calls(one), Ok(vec!["provider_remove".to_string()]));
    assert!(direct_calls(handler(src, "two").expect("two")).is_err());
}
