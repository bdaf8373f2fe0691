//! The guard's provider action: `--action stop|release` on a machine rented through gpurent is
//! one HTTP call from the machine itself (curl, else wget with `--method`) to the provider's API,
//! with the narrowest credential the machine has (docs/guard.md "Which credential each action
//! uses"):
//!
//! - **Vast**: the per-instance key in the container's environment (`CONTAINER_API_KEY`, with
//!   `CONTAINER_ID` naming the instance), read by the guard at the moment it acts from its own
//!   environment or, where SSH sessions do not carry it, from PID 1's (`/proc/1/environ`).
//! - **RunPod**: the pod's own `RUNPOD_API_KEY` (RunPod: every pod comes with "a Pod-scoped API
//!   key" for `runpodctl`), with `RUNPOD_POD_ID` naming the pod, read the same way.
//! - Otherwise (Lambda always: it has no per-instance key) only with the user's explicit consent
//!   (`allow_full_key`): the account's full key written to `~/.gpurent/guard/provider.key`, mode
//!   0600, over the SSH session's stdin (never a command line).
//!
//! The environment keys are never copied anywhere: `guard.conf` names the variable, not its value.
//! The base URL is the client's (`GPURENT_<X>_API_URL` or the production one), so tests point it
//! at Prism's validating proxy in front of the fake cloud.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::{ActionKind, GuardError, HostFacts};
use crate::providers::ProviderKind;
use crate::remote::shell_quote;

/// The file the full key goes in, under the guard's folder (only with `allow_full_key`).
pub const KEY_FILE: &str = "provider.key";

/// The machine as the ledger knows it: which provider, its id there, where its API is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ProviderTarget {
    pub provider: ProviderKind,
    /// The ledger id (`gpurent-…`).
    pub instance: String,
    pub provider_instance_id: String,
    pub account: String,
    /// The API base URL the guard calls (no trailing slash).
    pub base_url: String,
}

/// Which credential the guard's provider call uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Credential {
    /// The instance's own key in its environment (Vast `CONTAINER_API_KEY`, RunPod
    /// `RUNPOD_API_KEY`): read when acting, never copied.
    InstanceEnv,
    /// The account's full key in `~/.gpurent/guard/provider.key` (0600), with the user's consent.
    FullKeyFile,
}

/// The HTTP tool on the host the guard calls the API with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum HttpTool {
    Curl,
    /// GNU wget with `--method` (busybox wget cannot send PUT/DELETE).
    Wget,
}

/// What the guard will send when it acts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ProviderAction {
    pub provider: ProviderKind,
    pub method: String,
    pub url: String,
    pub body: Option<String>,
    pub credential: Credential,
    /// The environment variable the key is read from (`InstanceEnv`).
    pub credential_var: Option<String>,
    pub http_tool: HttpTool,
    /// `Authorization: Bearer <key>` (`true`), or the key alone (AutoDL).
    #[serde(default = "yes")]
    pub bearer: bool,
    /// A 2xx counts as done only when its body contains this (AutoDL: `"code":"Success"`).
    #[serde(default)]
    pub ok_word: Option<String>,
}

fn yes() -> bool {
    true
}

/// The API request for `action` on the provider's instance `id` (the clients' own paths, checked
/// against the specs by the provider tests).
pub fn request(
    provider: ProviderKind,
    base_url: &str,
    id: &str,
    action: ActionKind,
) -> Result<(&'static str, String, Option<String>), GuardError> {
    let base = base_url.trim_end_matches('/');
    let safe = !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !safe {
        return Err(GuardError::invalid(
            "instance",
            format!("the provider id '{id}' is not a plain id"),
        ));
    }
    let spec = provider.spec();
    let call = match action {
        ActionKind::Release if spec.release_needs_stop => {
            return Err(GuardError::ProviderActionUnavailable {
                action,
                reason: format!(
                    "{} releases only a machine that is powered off, which the guard's one call cannot do: use stop (the disk is kept; release it from gpurent)",
                    spec.display
                ),
            })
        }
        ActionKind::Release => spec.guard_release,
        ActionKind::Stop => {
            spec.guard_stop
                .ok_or_else(|| GuardError::ProviderActionUnavailable {
                    action,
                    reason: format!(
                        "{} instances cannot be stopped, only released (terminated)",
                        spec.display
                    ),
                })?
        }
        a => {
            return Err(GuardError::ProviderActionUnavailable {
                action: a,
                reason: "only stop and release go through the provider".into(),
            })
        }
    };
    Ok((
        call.method,
        format!("{base}{}", call.path.replace("{id}", id)),
        call.body.map(|b| b.replace("{id}", id)),
    ))
}

/// The instance's own key variable and the variable naming the instance, where the provider has one.
pub fn instance_env(provider: ProviderKind) -> Option<(&'static str, &'static str)> {
    provider.spec().machine_env
}

/// Decide how the guard on this host will make the call: the HTTP tool, and the narrowest
/// credential (the instance's own key where the host has it *and* its id variable names this
/// instance; else the full key only with `allow_full_key`).
pub fn plan(
    action: ActionKind,
    allow_full_key: bool,
    facts: &HostFacts,
    target: &ProviderTarget,
) -> Result<ProviderAction, GuardError> {
    let (method, url, body) = request(
        target.provider,
        &target.base_url,
        &target.provider_instance_id,
        action,
    )?;
    // The host names another instance: it is not the machine rented (its key is never used, and
    // the account's full key never goes there, consent or not).
    if let (Some(_), Some(found)) = (instance_env(target.provider), facts.instance_id.as_deref()) {
        if found != target.provider_instance_id {
            return Err(GuardError::WrongMachine {
                provider: target.provider,
                expected: target.provider_instance_id.clone(),
                found: found.to_string(),
            });
        }
    }
    let http_tool = if facts.curl {
        HttpTool::Curl
    } else if facts.wget_method {
        HttpTool::Wget
    } else {
        return Err(GuardError::HttpToolMissing {
            wget_without_method: facts.wget,
        });
    };
    let own = instance_env(target.provider).filter(|_| {
        facts.instance_key
            && facts.instance_id.as_deref() == Some(target.provider_instance_id.as_str())
    });
    let (credential, credential_var) = match own {
        Some((var, _)) => (Credential::InstanceEnv, Some(var.to_string())),
        None if allow_full_key => (Credential::FullKeyFile, None),
        None => {
            let reason = match instance_env(target.provider) {
                None => format!(
                    "{} has no per-instance key; the guard can act only with the account's full key on the machine (--allow-full-key)",
                    target.provider
                ),
                Some((var, id_var)) if facts.instance_key => format!(
                    "{id_var} on the machine does not name instance {} (found {}); refusing to use its {var}",
                    target.provider_instance_id,
                    facts.instance_id.as_deref().unwrap_or("nothing")
                ),
                Some((var, _)) => format!(
                    "the machine has no {var} in its environment; the guard can act only with the account's full key on the machine (--allow-full-key)"
                ),
            };
            return Err(GuardError::ProviderCredentialUnavailable {
                provider: target.provider,
                reason,
            });
        }
    };
    Ok(ProviderAction {
        provider: target.provider,
        method: method.to_string(),
        url,
        body,
        credential,
        credential_var,
        http_tool,
        bearer: target.provider.spec().auth == crate::providers::spec::AuthStyle::Bearer,
        ok_word: target.provider.spec().guard_ok.map(String::from),
    })
}

/// The `guard.conf` lines of a provider action (every value quoted).
pub fn conf_lines(a: &ProviderAction) -> Result<String, GuardError> {
    let q = |s: &str| shell_quote(s).map_err(GuardError::from);
    Ok(format!(
        "PROVIDER_METHOD={}\nPROVIDER_URL={}\nPROVIDER_BODY={}\nPROVIDER_CRED={}\nPROVIDER_CRED_VAR={}\nHTTP_TOOL={}\nPROVIDER_AUTH={}\nPROVIDER_OK={}\n",
        q(&a.method)?,
        q(&a.url)?,
        q(a.body.as_deref().unwrap_or(""))?,
        match a.credential {
            Credential::InstanceEnv => "env",
            Credential::FullKeyFile => "file",
        },
        q(a.credential_var.as_deref().unwrap_or(""))?,
        match a.http_tool {
            HttpTool::Curl => "curl",
            HttpTool::Wget => "wget",
        },
        if a.bearer { "bearer" } else { "plain" },
        q(a.ok_word.as_deref().unwrap_or(""))?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(p: ProviderKind) -> ProviderTarget {
        ProviderTarget {
            provider: p,
            instance: "gpurent-000000000001".into(),
            provider_instance_id: "1000".into(),
            account: p.as_str().into(),
            base_url: "http://127.0.0.1:9/".into(),
        }
    }

    fn facts(curl: bool, key: bool, id: Option<&str>) -> HostFacts {
        HostFacts {
            curl,
            instance_key: key,
            instance_id: id.map(String::from),
            ..HostFacts::default()
        }
    }

    /// AutoDL's guard call: power_off / release with the instance in the body, the token alone
    /// (no "Bearer"), done only on its success word; Vast's keeps "Bearer" and no word.
    #[test]
    fn an_autodl_guard_sends_its_token_alone_and_waits_for_success() {
        let a = plan(
            ActionKind::Stop,
            true,
            &facts(true, false, None),
            &target(ProviderKind::Autodl),
        )
        .expect("full key, with consent");
        assert_eq!(a.credential, Credential::FullKeyFile);
        assert_eq!(
            (a.method.as_str(), a.url.as_str(), a.body.as_deref()),
            (
                "POST",
                "http://127.0.0.1:9/api/v1/dev/instance/pro/power_off",
                Some(r#"{"instance_uuid":"1000"}"#)
            )
        );
        let conf = conf_lines(&a).expect("conf");
        assert!(conf.contains("PROVIDER_AUTH=plain\n"), "{conf}");
        // Release needs the machine powered off first: one call cannot do it, so it is refused.
        let e = plan(
            ActionKind::Release,
            true,
            &facts(true, false, None),
            &target(ProviderKind::Autodl),
        )
        .expect_err("release needs a stop first");
        assert_eq!(crate::Coded::code(&e), "guard_provider_action_unavailable");
        assert!(conf.contains(r#"PROVIDER_OK='"code":"Success"'"#), "{conf}");
        let v = plan(
            ActionKind::Stop,
            true,
            &facts(true, false, None),
            &target(ProviderKind::Vast),
        )
        .expect("vast");
        let conf = conf_lines(&v).expect("conf");
        assert!(
            conf.contains("PROVIDER_AUTH=bearer\nPROVIDER_OK=''\n"),
            "{conf}"
        );
    }

    #[test]
    fn narrowest_credential_first_and_refusals_with_codes() {
        use crate::Coded;
        let vast = target(ProviderKind::Vast);
        let a = plan(
            ActionKind::Stop,
            false,
            &facts(true, true, Some("1000")),
            &vast,
        )
        .expect("own key");
        assert_eq!(a.credential, Credential::InstanceEnv);
        assert_eq!(a.credential_var.as_deref(), Some("CONTAINER_API_KEY"));
        assert_eq!(
            (a.method.as_str(), a.url.as_str()),
            ("PUT", "http://127.0.0.1:9/api/v0/instances/1000")
        );
        assert_eq!(a.http_tool, HttpTool::Curl);
        // The host names another instance: refused, and the full key never goes there, not even
        // with consent (before: the full key was written to the other instance).
        let other = facts(true, true, Some("999"));
        let e = plan(ActionKind::Stop, false, &other, &vast).expect_err("wrong instance");
        assert_eq!(e.code(), "guard_wrong_machine");
        let e = plan(ActionKind::Release, true, &other, &vast).expect_err("wrong instance");
        assert_eq!(e.code(), "guard_wrong_machine");
        let e = plan(
            ActionKind::Release,
            true,
            &facts(true, false, Some("999")),
            &vast,
        )
        .expect_err("wrong instance, no key of its own");
        assert_eq!(e.code(), "guard_wrong_machine");
        // No id variable at all (a custom image): the full key with consent only.
        let a =
            plan(ActionKind::Release, true, &facts(true, false, None), &vast).expect("full key");
        assert_eq!(a.credential, Credential::FullKeyFile);
        assert_eq!(a.method, "DELETE");
        // Lambda: no per-instance key at all; stop is impossible.
        let lambda = target(ProviderKind::Lambda);
        let e = plan(
            ActionKind::Release,
            false,
            &facts(true, false, None),
            &lambda,
        )
        .expect_err("no key");
        assert_eq!(e.code(), "guard_provider_credential_unavailable");
        let e = plan(ActionKind::Stop, true, &facts(true, false, None), &lambda)
            .expect_err("lambda stop");
        assert_eq!(e.code(), "guard_provider_action_unavailable");
        let a = plan(
            ActionKind::Release,
            true,
            &facts(true, false, None),
            &lambda,
        )
        .expect("lambda release");
        assert_eq!(a.body.as_deref(), Some(r#"{"instance_ids":["1000"]}"#));
        // RunPod: the pod's own key, POST …/action.
        let a = plan(
            ActionKind::Stop,
            false,
            &facts(true, true, Some("1000")),
            &target(ProviderKind::Runpod),
        )
        .expect("pod key");
        assert_eq!(a.credential_var.as_deref(), Some("RUNPOD_API_KEY"));
        assert!(a.url.ends_with("/v2/pods/1000/action"));
        // No curl, busybox wget (no --method): refused, never a silent no-op.
        let mut f = facts(false, true, Some("1000"));
        f.wget = true;
        let e = plan(ActionKind::Stop, false, &f, &vast).expect_err("no tool");
        assert_eq!(e.code(), "guard_http_tool_missing");
        f.wget_method = true;
        let a = plan(ActionKind::Stop, false, &f, &vast).expect("wget");
        assert_eq!(a.http_tool, HttpTool::Wget);
        // An id that is not plain never reaches a URL.
        let mut bad = target(ProviderKind::Vast);
        bad.provider_instance_id = "1/../x".into();
        assert!(plan(ActionKind::Stop, true, &facts(true, false, None), &bad).is_err());
    }
}
