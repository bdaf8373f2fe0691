//! Credentials out of probe text. A host's pip configuration (`pip config list`, `PIP_INDEX_URL`,
//! `PIP_EXTRA_INDEX_URL`, `PIP_FIND_LINKS`) often names a private index as
//! `https://user:token@host/simple` or `https://__token__:pypi-…@host/`. Every URL's user-info
//! (everything between `scheme://` and the `@` before the host) becomes `***` before a raw probe
//! is saved, parsed or shown, so no byte of a credential reaches the disk, the report or the UI.

/// The mark that replaces a URL's user-info.
pub const REDACTED: &str = "***";

/// Characters that end a URL's authority (`scheme://AUTHORITY/path`) in probe text: the path,
/// query or fragment starts, or the URL ends (whitespace, quotes, brackets, separators).
fn ends_authority(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            '/' | '?' | '#' | '\'' | '"' | '`' | '<' | '>' | ',' | ';'
        )
}

/// `text` with the user-info of every `scheme://user[:password]@host` URL replaced by `***`.
pub fn redact_credentials(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let end = tail.find(ends_authority).unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(at) => {
                out.push_str(REDACTED);
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_info_of_every_url_is_replaced() {
        assert_eq!(
            redact_credentials(
                "config=global.index-url='https://alice:s3cr3t@pypi.corp.example/simple'"
            ),
            "config=global.index-url='https://***@pypi.corp.example/simple'"
        );
        assert_eq!(
            redact_credentials(
                "env=PIP_EXTRA_INDEX_URL=https://__token__:pypi-AgEIcHlwaS5vcmc@upload.pypi.org/legacy/ https://x@h"
            ),
            "env=PIP_EXTRA_INDEX_URL=https://***@upload.pypi.org/legacy/ https://***@h"
        );
        // A token alone, an @ inside the password, a port.
        assert_eq!(
            redact_credentials("https://ghp_abc@github.com:443/x"),
            "https://***@github.com:443/x"
        );
        assert_eq!(
            redact_credentials("http://u:p@ss@10.0.0.1:3141/root/pypi"),
            "http://***@10.0.0.1:3141/root/pypi"
        );
    }

    #[test]
    fn urls_without_credentials_and_other_text_are_untouched() {
        for s in [
            "reach https://download.pytorch.org/whl/ rc=0 http=200",
            "nvcc: release 12.8, V12.8.93",
            "mail me at a@b.c",
            "git@github.com:x/y.git",
            "https://pypi.org/simple/?q=a@b",
            "ends with ://",
            "中文 https://mirrors.aliyun.com/pypi/simple/",
        ] {
            assert_eq!(redact_credentials(s), s);
        }
    }
}
