//! Baseline for measurements: the smallest Tauri v2 app, one window with a static page.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    if let Err(e) = tauri::Builder::default().run(tauri::generate_context!()) {
        eprintln!("bare-window: {e}");
        std::process::exit(1);
    }
}
