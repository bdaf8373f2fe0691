//! User settings: a small JSON file in the config dir, written atomically (temp file + rename).
//! A damaged file is kept aside and defaults are used, so a bad edit never locks the user out.

use std::path::Path;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::infra::currency::Currency;
use crate::infra::error::CoreError;

/// UI language preference. `System` follows the OS locale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
pub enum LanguagePref {
    #[default]
    #[serde(rename = "system")]
    System,
    #[serde(rename = "en")]
    En,
    #[serde(rename = "zh-CN")]
    ZhCn,
}

/// A language the UI has translations for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
pub enum Language {
    #[serde(rename = "en")]
    En,
    #[serde(rename = "zh-CN")]
    ZhCn,
}

/// Theme preference. `System` follows the OS (CSS `prefers-color-scheme`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ThemePref {
    #[default]
    System,
    Light,
    Dark,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct Settings {
    pub language: LanguagePref,
    pub theme: ThemePref,
    /// The currency new rates, budgets and card prices are entered in; `null` follows the
    /// language (Chinese → CNY, else USD). Money is never converted.
    pub currency: Option<Currency>,
}

/// Map an OS locale string (`zh-CN`, `zh_Hans_CN.UTF-8`, `en-US`, ...) to a UI language.
/// Every Chinese locale gets zh-CN (the only Chinese translation); everything else English.
pub fn language_for_locale(locale: Option<&str>) -> Language {
    match locale {
        Some(l) if l.to_ascii_lowercase().starts_with("zh") => Language::ZhCn,
        _ => Language::En,
    }
}

/// The OS's preferred locale, if the platform tells.
pub fn os_locale() -> Option<String> {
    sys_locale::get_locale()
}

impl Settings {
    /// The language to show, given the OS locale.
    pub fn effective_language(&self, os_locale: Option<&str>) -> Language {
        match self.language {
            LanguagePref::En => Language::En,
            LanguagePref::ZhCn => Language::ZhCn,
            LanguagePref::System => language_for_locale(os_locale),
        }
    }

    /// The currency amounts are entered in by default: the choice, or the shown language's
    /// (中文 → CNY, English → USD).
    pub fn effective_currency(&self, os_locale: Option<&str>) -> Currency {
        self.currency
            .unwrap_or(match self.effective_language(os_locale) {
                Language::ZhCn => Currency::Cny,
                Language::En => Currency::Usd,
            })
    }

    /// Load from `path`. A missing file gives defaults. A damaged file is renamed to
    /// `settings.json.damaged` and reported as `SettingsDamaged` together with the defaults, so the
    /// caller can tell the user and carry on.
    pub fn load(path: &Path) -> (Settings, Option<CoreError>) {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return (Settings::default(), None)
            }
            Err(e) => return (Settings::default(), Some(CoreError::io(path, e))),
        };
        match serde_json::from_str(&text) {
            Ok(s) => (s, None),
            Err(_) => {
                let backup = path.with_extension("json.damaged");
                let err = match std::fs::rename(path, &backup) {
                    Ok(()) => CoreError::SettingsDamaged { backup },
                    Err(e) => CoreError::io(path, e),
                };
                (Settings::default(), Some(err))
            }
        }
    }

    /// Write atomically: a temp file beside the target, then rename over it.
    pub fn save(&self, path: &Path) -> Result<(), CoreError> {
        write_atomic(path, &serde_json::to_vec_pretty(self).unwrap_or_default())
    }
}

/// Write a file so that readers see the old or the new content, never half of one.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), CoreError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| CoreError::io(dir, e))?;
    }
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).map_err(|e| CoreError::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| CoreError::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locale_mapping() {
        assert_eq!(language_for_locale(Some("zh-CN")), Language::ZhCn);
        assert_eq!(language_for_locale(Some("zh_TW.UTF-8")), Language::ZhCn);
        assert_eq!(language_for_locale(Some("en-US")), Language::En);
        assert_eq!(language_for_locale(Some("de-DE")), Language::En);
        assert_eq!(language_for_locale(None), Language::En);
    }

    #[test]
    fn explicit_choice_beats_os() {
        let s = Settings {
            language: LanguagePref::En,
            ..Default::default()
        };
        assert_eq!(s.effective_language(Some("zh-CN")), Language::En);
        let s = Settings::default();
        assert_eq!(s.effective_language(Some("zh-CN")), Language::ZhCn);
    }

    #[test]
    fn round_trip_and_wire_names() {
        let tmp = tempfile::tempdir().expect("tmp");
        let path = tmp.path().join("cfg/settings.json");
        let s = Settings {
            language: LanguagePref::ZhCn,
            theme: ThemePref::Dark,
            currency: Some(Currency::Usd),
        };
        s.save(&path).expect("save");
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(
            text.contains("\"zh-CN\"") && text.contains("\"dark\""),
            "{text}"
        );
        let (back, err) = Settings::load(&path);
        assert!(err.is_none());
        assert_eq!(back, s);
    }

    #[test]
    fn missing_file_is_defaults_without_error() {
        let tmp = tempfile::tempdir().expect("tmp");
        let (s, err) = Settings::load(&tmp.path().join("nope.json"));
        assert_eq!(s, Settings::default());
        assert!(err.is_none());
    }

    #[test]
    fn damaged_file_is_kept_aside_and_reported() {
        let tmp = tempfile::tempdir().expect("tmp");
        let path = tmp.path().join("settings.json");
        std::fs::write(&path, "{ not json").expect("write");
        let (s, err) = Settings::load(&path);
        assert_eq!(s, Settings::default());
        match err {
            Some(CoreError::SettingsDamaged { backup }) => {
                assert_eq!(
                    std::fs::read_to_string(backup).expect("backup"),
                    "{ not json"
                );
            }
            other => panic!("expected SettingsDamaged, got {other:?}"),
        }
        assert!(!path.exists());
    }

    #[test]
    fn unknown_fields_and_missing_fields_are_tolerated() {
        let s: Settings = serde_json::from_str(r#"{"theme":"light","future":1}"#).expect("parse");
        assert_eq!(s.theme, ThemePref::Light);
        assert_eq!(s.language, LanguagePref::System);
        assert_eq!(
            s.currency, None,
            "settings saved before currencies follow the language"
        );
    }

    /// The default currency follows the locale (zh-CN → CNY, else USD) until chosen.
    #[test]
    fn currency_follows_the_locale_until_chosen() {
        let s = Settings::default();
        assert_eq!(s.effective_currency(Some("zh-CN")), Currency::Cny);
        assert_eq!(s.effective_currency(Some("en-US")), Currency::Usd);
        assert_eq!(s.effective_currency(None), Currency::Usd);
        let en = Settings {
            language: LanguagePref::En,
            ..Default::default()
        };
        assert_eq!(en.effective_currency(Some("zh-CN")), Currency::Usd);
        let chosen = Settings {
            currency: Some(Currency::Cny),
            ..Default::default()
        };
        assert_eq!(chosen.effective_currency(Some("en-US")), Currency::Cny);
        let text = serde_json::to_string(&chosen).expect("json");
        assert!(text.contains("\"currency\":\"CNY\""), "{text}");
    }
}
