// Every app command is listed here so Tauri generates `allow-<command>` permissions for it; the
// capability in capabilities/main.json then grants exactly these to the main window and nothing
// else (least privilege: no core plugin permissions at all).
const COMMANDS: &[&str] = &[
    "catalog_list",
    "catalog_card",
    "settings_get",
    "settings_set",
    "selfcheck_run",
    "op_cancel",
    "op_pause",
    "estimate_run",
    "estimate_defaults",
    "estimate_models",
    "estimate_quants",
    "local_fit",
    "prices_list",
    "price_set",
    "price_delete",
    "key_list",
    "key_new",
    "key_import",
    "key_delete",
    "key_export_private",
    "key_unlock",
    "key_lock",
    "host_list",
    "host_preview",
    "host_add",
    "host_check",
    "host_repin",
    "host_ssh_config",
    "host_delete",
    "host_open_terminal",
    "host_open_vscode",
    "setup_probe",
    "setup_fix",
    "setup_verify",
    "files_ls",
    "files_mkdir",
    "files_rename",
    "files_delete",
    "files_scan",
    "files_put",
    "files_get",
    "files_transfers",
    "files_resume",
    "files_discard",
    "files_pick",
];

fn main() {
    tauri_build::try_build(
        tauri_build::Attributes::new()
            .app_manifest(tauri_build::AppManifest::new().commands(COMMANDS)),
    )
    .expect("tauri-build failed");
}
