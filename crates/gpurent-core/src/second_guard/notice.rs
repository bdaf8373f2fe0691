//! The second guard's notices: what each says (its kind and the numbers its text needs), the
//! key it is sent once under, and its words for the OS notification.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::billing::budget::Period;
use crate::billing::platforms::Platform;
use crate::billing::Currency;

/// What a notice is about (the UI and the OS notification text branch on it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum NoticeKind {
    /// Idle for `minutes`; the guard acts at `limit_minutes`.
    Idle,
    /// The guard's deadline is in `minutes`.
    DeadlineSoon,
    /// The deadline passed and the machine still bills.
    DeadlineMissed,
    /// 80 % of a budget spent.
    BudgetWarn,
    /// 100 % of a budget spent.
    BudgetOver,
    /// The balance runs out in about `hours`.
    BalanceLow,
    /// A stop or release was sent but the provider still shows the machine billing.
    StillBilling,
    /// The deadline passed, the guard on the machine did not act, and gpurent performed the
    /// guard's action (`action`) itself; `state`: what the provider said afterwards.
    DeadlineActed,
    /// gpurent tried the guard's action at the missed deadline and the provider did not confirm
    /// it (`why`: the error code, `state`: the provider's state if it said one).
    DeadlineActFailed,
    /// A budget with "stop at 100 %" is used up but this machine cannot be stopped (Lambda has no
    /// stop, only release): nothing was sent; release it with the checklist, or keep it.
    BudgetCannotStop,
    /// gpurent stopped or released the machine (`action`) itself, but its guard held the
    /// account's full API key and the machine could not be reached to take it off first
    /// (`error`: why): the key may remain on its disk — revoke it at the provider.
    KeyLeft,
    /// The guard on the machine runs but has not sampled for longer than it ever should (stuck,
    /// e.g. on a hung driver): neither idle nor its deadline can fire there.
    GuardStale,
    /// A machine powered off on a platform that releases machines left off N days in a row
    /// (AutoDL: 15) will be released, its data wiped, in about `hours` (`platform` says which).
    ReleaseSoon,
}

/// Why the app only notified of a missed deadline (did not act itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum NoActReason {
    /// A pasted host: gpurent has no provider API for it.
    PastedHost,
    /// The provider could not be read this tick: gpurent never acts on a stale ledger.
    ProviderUnreadable,
    /// The guard's action is on the machine (`poweroff`, a command), not a provider call.
    ActionOnMachine,
}

/// One thing to tell the user, with the numbers its text needs. In JSON the budget amounts are
/// also `spent` and `budget_amount` (neutral names, in `currency`) beside the older `spent_usd`
/// and `budget_usd` ([`NoticeJson`]); reading JSON (the stored notices) takes the older names.
#[derive(Debug, Clone, PartialEq, Deserialize, TS)]
#[ts(as = "NoticeJson")]
pub struct Notice {
    /// De-duplication key: the same key is never sent twice.
    pub key: String,
    pub kind: NoticeKind,
    /// The machine (`None`: a total budget or an account).
    pub host: Option<String>,
    pub account: Option<String>,
    pub period: Option<Period>,
    pub minutes: Option<i64>,
    pub limit_minutes: Option<i64>,
    pub hours: Option<f64>,
    /// Budget notices: spent and the limit, in `currency`.
    pub spent_usd: Option<f64>,
    pub budget_usd: Option<f64>,
    /// What `spent_usd` and `budget_usd` are in (absent: USD, as before currencies).
    #[serde(default)]
    pub currency: Option<Currency>,
    /// `deadline_acted` / `deadline_act_failed`: the action gpurent performed (`stop`, `release`).
    #[serde(default)]
    pub action: Option<String>,
    /// The provider's state after gpurent's action (its own status text).
    #[serde(default)]
    pub state: Option<String>,
    /// `deadline_act_failed`: the error code.
    #[serde(default)]
    pub error: Option<String>,
    /// `deadline_missed`: why gpurent did not act itself.
    #[serde(default)]
    pub no_act: Option<NoActReason>,
    /// `release_soon`: the platform that will release the machine.
    #[serde(default)]
    pub platform: Option<Platform>,
}

/// [`Notice`] as JSON and TypeScript: `spent` and `budget_amount` beside the older `usd` names.
#[derive(Debug, Clone, Serialize, TS)]
pub struct NoticeJson {
    /// De-duplication key: the same key is never sent twice.
    key: String,
    kind: NoticeKind,
    /// The machine (`null`: a total budget or an account).
    host: Option<String>,
    account: Option<String>,
    period: Option<Period>,
    minutes: Option<i64>,
    limit_minutes: Option<i64>,
    hours: Option<f64>,
    /// Budget notices: spent in the period, in `currency`.
    spent: Option<f64>,
    /// Budget notices: the limit, in `currency`.
    budget_amount: Option<f64>,
    /// Deprecated: the same number as `spent` (in `currency`, despite the name).
    spent_usd: Option<f64>,
    /// Deprecated: the same number as `budget_amount` (in `currency`, despite the name).
    budget_usd: Option<f64>,
    /// What the budget amounts are in (`null`: USD, as before currencies).
    currency: Option<Currency>,
    action: Option<String>,
    state: Option<String>,
    error: Option<String>,
    no_act: Option<NoActReason>,
    /// `release_soon`: the platform that will release the machine (`null` otherwise).
    platform: Option<Platform>,
}

impl From<Notice> for NoticeJson {
    fn from(
        Notice {
            key,
            kind,
            host,
            account,
            period,
            minutes,
            limit_minutes,
            hours,
            spent_usd,
            budget_usd,
            currency,
            action,
            state,
            error,
            no_act,
            platform,
        }: Notice,
    ) -> Self {
        NoticeJson {
            key,
            kind,
            host,
            account,
            period,
            minutes,
            limit_minutes,
            hours,
            spent: spent_usd,
            budget_amount: budget_usd,
            spent_usd,
            budget_usd,
            currency,
            action,
            state,
            error,
            no_act,
            platform,
        }
    }
}

/// Written as [`NoticeJson`] (the neutral names beside the older ones).
impl Serialize for Notice {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        NoticeJson::from(self.clone()).serialize(s)
    }
}

impl Notice {
    /// Budget notices: spent in the period, in [`Notice::currency`].
    pub fn spent(&self) -> Option<f64> {
        self.spent_usd
    }

    /// Budget notices: the limit, in [`Notice::currency`].
    pub fn budget_amount(&self) -> Option<f64> {
        self.budget_usd
    }

    pub(crate) fn new(key: String, kind: NoticeKind) -> Notice {
        Notice {
            key,
            kind,
            host: None,
            account: None,
            period: None,
            minutes: None,
            limit_minutes: None,
            hours: None,
            spent_usd: None,
            budget_usd: None,
            currency: None,
            action: None,
            state: None,
            error: None,
            no_act: None,
            platform: None,
        }
    }
}

/// The OS notification's title and body for a notice, in the app's language. (The UI's own texts
/// live in its dictionaries; an OS notification is sent from the shell, so its words are here.)
pub fn notice_text(lang: crate::infra::settings::Language, n: &Notice) -> (String, String) {
    use crate::infra::settings::Language;
    let zh = lang == Language::ZhCn;
    let host = n.host.clone().unwrap_or_default();
    let account = n.account.clone().unwrap_or_default();
    let min = n.minutes.unwrap_or(0);
    let limit = n.limit_minutes.unwrap_or(0);
    let currency = n.currency.unwrap_or_default();
    let amount = |v: Option<f64>| currency.format(v.unwrap_or(0.0), 2);
    let (spent, budget) = (amount(n.spent()), amount(n.budget_amount()));
    let per = match (n.period, zh) {
        (Some(Period::Month), false) => "this month",
        (_, false) => "today",
        (Some(Period::Month), true) => "本月",
        (_, true) => "今日",
    };
    let whose = match (&n.host, zh) {
        (Some(h), false) => format!("{h}'s budget"),
        (None, false) => "The total budget".to_string(),
        (Some(h), true) => format!("{h} 的预算"),
        (None, true) => "总预算".to_string(),
    };
    let hours = n.hours.unwrap_or(0.0);
    let platform = match (n.platform, zh) {
        (Some(Platform::Autodl), _) => "AutoDL",
        (Some(Platform::Gpushare), true) => "恒源云",
        (Some(Platform::Gpushare), false) => "Gpushare (恒源云)",
        (Some(Platform::Matpool), true) => "矩池云",
        (Some(Platform::Matpool), false) => "Matpool (矩池云)",
        (Some(Platform::Featurize), _) => "Featurize",
        (Some(Platform::Other) | None, false) => "The platform",
        (Some(Platform::Other) | None, true) => "平台",
    };
    let days = n
        .platform
        .and_then(|p| crate::billing::platforms::rules_for(p).ok())
        .and_then(|r| r.release_after_days_off);
    match (n.kind, zh) {
        (NoticeKind::Idle, false) => (
            format!("{host} has been idle for {min} min"),
            format!("It still bills. The guard on it acts after {limit} min idle; release it if you are done."),
        ),
        (NoticeKind::Idle, true) => (
            format!("{host} 已空闲 {min} 分钟"),
            format!("仍在计费。机器上的守护进程将在空闲 {limit} 分钟后执行操作；用完请释放。"),
        ),
        (NoticeKind::DeadlineSoon, false) => (
            format!("{host}: deadline in {min} min"),
            "The guard acts at its deadline whatever the machine is doing. Snooze it or download your results now.".into(),
        ),
        (NoticeKind::DeadlineSoon, true) => (
            format!("{host}：{min} 分钟后到截止时间"),
            "到截止时间守护进程会执行操作，无论机器在做什么。现在可以推迟，或先下载结果。".into(),
        ),
        (NoticeKind::DeadlineMissed, false) => (
            format!("{host} still bills {min} min after its deadline"),
            match n.no_act {
                Some(NoActReason::PastedHost) => "The guard on the machine did not stop it, and gpurent has no provider API for a pasted host, so it cannot stop it: stop it in the platform's console.",
                Some(NoActReason::ProviderUnreadable) => "The guard on the machine did not stop it. gpurent could not read the provider now, so it did not act: stop or release it in the Billing step.",
                _ => "The guard on the machine did not stop it. Stop or release it in gpurent's Billing step.",
            }
            .into(),
        ),
        (NoticeKind::DeadlineMissed, true) => (
            format!("{host} 超过截止时间 {min} 分钟仍在计费"),
            match n.no_act {
                Some(NoActReason::PastedHost) => "机器上的守护进程没有停止它；这是手动添加的主机，gpurent 没有平台 API，无法停止它：请在平台控制台中停止。",
                Some(NoActReason::ProviderUnreadable) => "机器上的守护进程没有停止它。gpurent 现在无法读取平台状态，因此没有执行操作：请在「计费」步骤中停止或释放。",
                _ => "机器上的守护进程没有停止它。请在 gpurent 的「计费」步骤中停止或释放。",
            }
            .into(),
        ),
        (NoticeKind::DeadlineActed, false) => (
            format!(
                "gpurent {} {host} at its deadline",
                if n.action.as_deref() == Some("release") { "released" } else { "stopped" }
            ),
            format!(
                "The guard on the machine did not. The provider now says: {}.",
                n.state.as_deref().unwrap_or("gone")
            ),
        ),
        (NoticeKind::DeadlineActed, true) => (
            format!(
                "gpurent 已在截止时间{} {host}",
                if n.action.as_deref() == Some("release") { "释放" } else { "停止" }
            ),
            format!(
                "机器上的守护进程没有执行。平台现在显示：{}。",
                n.state.as_deref().unwrap_or("已删除")
            ),
        ),
        (NoticeKind::DeadlineActFailed, false) => (
            format!("{host} still bills after its deadline"),
            format!(
                "The guard on the machine did not act and gpurent's {} was not confirmed by the provider ({}). Check it in the Billing step.",
                n.action.as_deref().unwrap_or("stop"),
                n.state.as_deref().or(n.error.as_deref()).unwrap_or("no answer")
            ),
        ),
        (NoticeKind::DeadlineActFailed, true) => (
            format!("{host} 超过截止时间仍在计费"),
            format!(
                "机器上的守护进程没有执行，gpurent 的{}请求也未得到平台确认（{}）。请在「计费」步骤中查看。",
                if n.action.as_deref() == Some("release") { "释放" } else { "停止" },
                n.state.as_deref().or(n.error.as_deref()).unwrap_or("无应答")
            ),
        ),
        (NoticeKind::BudgetWarn, false) => (
            format!("{whose}: 80 % spent {per}"),
            format!("{spent} of {budget}."),
        ),
        (NoticeKind::BudgetWarn, true) => (
            format!("{whose}：{per}已用 80 %"),
            format!("已花 {spent}，预算 {budget}。"),
        ),
        (NoticeKind::BudgetOver, false) => (
            format!("{whose} is used up {per}"),
            format!("{spent} of {budget}."),
        ),
        (NoticeKind::BudgetOver, true) => (
            format!("{whose}{per}已用完"),
            format!("已花 {spent}，预算 {budget}。"),
        ),
        (NoticeKind::BalanceLow, false) => (
            format!("{account}: balance runs out in about {hours:.0} h"),
            "Then the platform may release the machine and delete its disk. Top up or download your results.".into(),
        ),
        (NoticeKind::BalanceLow, true) => (
            format!("{account}：余额约 {hours:.0} 小时后用完"),
            "届时平台可能释放机器并删除磁盘。请充值或先下载结果。".into(),
        ),
        (NoticeKind::StillBilling, false) => (
            format!("{host} still bills"),
            "A stop was sent but the provider still shows it running. Check it in the Billing step.".into(),
        ),
        (NoticeKind::StillBilling, true) => (
            format!("{host} 仍在计费"),
            "已发送停止请求，但平台仍显示运行中。请在「计费」步骤中查看。".into(),
        ),
        (NoticeKind::BudgetCannotStop, false) => (
            format!("{whose} is used up, but {host} cannot be stopped"),
            format!(
                "{spent} of {budget}. Its provider has no stop (only release), so nothing was sent and it still bills. Release it in the Billing step — the release checklist shows what would be lost first."
            ),
        ),
        (NoticeKind::GuardStale, false) => (
            format!("The guard on {host} is stuck"),
            "It runs but has not checked the machine for a while, so neither the idle time nor its deadline can act, and the machine may bill on. Switch the guard off and set it again, or stop or release the machine yourself.".into(),
        ),
        (NoticeKind::GuardStale, true) => (
            format!("{host} 上的守护进程卡住了"),
            "它在运行，但已有一段时间没有检查机器，因此空闲时限和截止时间都无法执行，机器可能会一直计费。请关闭守护后重新设置，或自行停止或释放机器。".into(),
        ),
        (NoticeKind::KeyLeft, false) => (
            format!("{host}: your account's API key may remain on its disk"),
            format!(
                "gpurent {} it, but could not reach it first to delete the full API key its guard held (~/.gpurent/guard/provider.key; {}). Anyone who can read that disk (the host operator) may read the key: revoke it in the provider's console, create a new one and connect it with `gpurent provider add`.",
                if n.action.as_deref() == Some("release") { "released" } else { "stopped" },
                n.error.as_deref().unwrap_or("no answer")
            ),
        ),
        (NoticeKind::KeyLeft, true) => (
            format!("{host}：账户 API 密钥可能仍留在其磁盘上"),
            format!(
                "gpurent 已{}它，但之前无法连接到它来删除守护进程持有的完整 API 密钥（~/.gpurent/guard/provider.key；{}）。能读取该磁盘的人（主机运营方）可能读到这个密钥：请在平台控制台中吊销它，新建一个密钥，并用 `gpurent provider add` 重新连接。",
                if n.action.as_deref() == Some("release") { "释放" } else { "停止" },
                n.error.as_deref().unwrap_or("无应答")
            ),
        ),
        (NoticeKind::ReleaseSoon, false) => (
            format!("{platform} releases {host} in about {hours:.0} h"),
            format!(
                "{platform} releases a machine left powered off {} in a row and wipes its data. Start it, or download what you need and release it yourself.",
                days.map_or("too many days".to_string(), |d| format!("{d} days"))
            ),
        ),
        (NoticeKind::ReleaseSoon, true) => (
            format!("{platform} 约 {hours:.0} 小时后释放 {host}"),
            format!(
                "{platform} 会释放连续关机{}的机器并清空数据。请开机，或先下载需要的数据再自行释放。",
                days.map_or("过久".to_string(), |d| format!(" {d} 天"))
            ),
        ),
        (NoticeKind::BudgetCannotStop, true) => (
            format!("{whose}已用完，但 {host} 无法停止"),
            format!(
                "已花 {spent}，预算 {budget}。它的平台没有「停止」（只能释放），因此没有发送任何请求，它仍在计费。请在「计费」步骤中释放它——释放前的检查清单会先列出会丢失的内容。"
            ),
        ),
    }
}
