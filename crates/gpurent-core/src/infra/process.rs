//! Starting local helper processes the same way on every OS: which window a started program gets
//! (only Windows distinguishes them), and [`hide_console`] for every helper gpurent reads
//! (`ssh-add`, `icacls`), so a GUI build never flashes a console window.

use std::process::Command;

/// What window the started program gets (only Windows distinguishes them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// The program opens its own window (a terminal emulator, an URI handler).
    Own,
    /// A console program that should get a console window of its own (`CREATE_NEW_CONSOLE`).
    NewConsole,
    /// A helper whose output gpurent reads: no window ever (`CREATE_NO_WINDOW`).
    Hidden,
}

/// `CREATE_NO_WINDOW` on Windows (a no-op elsewhere): for every helper process gpurent starts
/// and reads (`ssh-add`, `icacls`), so a GUI build never flashes a console window.
pub fn hide_console(cmd: &mut Command) -> &mut Command {
    set_window(cmd, Window::Hidden)
}

#[cfg(windows)]
pub fn set_window(cmd: &mut Command, window: Window) -> &mut Command {
    use std::os::windows::process::CommandExt;
    const CREATE_NEW_CONSOLE: u32 = 0x0000_0010;
    const CREATE_NO_WINDOW: u32 = 0x0800_0000;
    match window {
        Window::Own => cmd,
        Window::NewConsole => cmd.creation_flags(CREATE_NEW_CONSOLE),
        Window::Hidden => cmd.creation_flags(CREATE_NO_WINDOW),
    }
}

#[cfg(not(windows))]
pub fn set_window(cmd: &mut Command, _window: Window) -> &mut Command {
    cmd
}
