//! The cost report: what each machine costs — a pasted host at its rate periods, a ledger machine
//! at its tariff, a machine gpurent did not start at the provider's price — so far, per hour now and
//! by a chosen time; the totals per currency; each account's balance and how long it lasts.
//! [`cost_report`] reads through [`CostReads`] (the store, the accounts' clients) and, when live,
//! [`Reconcile`] (the providers); the facade (`app/billing.rs`) hands it both.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::billing::instance::{self as priced, ProviderReported};
use crate::billing::money::{amount_in, sum_by_currency};
use crate::billing::platforms::{self, Platform};
use crate::billing::rates::HostRate;
use crate::billing::{
    cost_so_far, cost_until, state_at, usd_per_hour_now, usd_total, CostBreakdown, Currency,
    InstanceState, Money, StateChange, Tariff, Traffic,
};
use crate::infra::clock::Clock;
use crate::infra::error::CoreError;
use crate::infra::ipc::Coded;
use crate::providers::accounts::Account;
use crate::providers::foreign::ForeignSeen;
use crate::providers::ledger::{AccountFailure, InstanceEvent, LedgerInstance, ReconcileReport};
use crate::providers::{ProviderError, ProviderKind, RemoteInstance, RemoteState};

/// Whether a machine is a pasted host (the user's rate) or a provider machine (the ledger).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum MachineKind {
    Pasted,
    Provider,
    /// A machine a connected account lists that gpurent did not start ("not started by
    /// gpurent — still billing"): its price is the provider's; `instance` is `null`.
    Foreign,
}

/// What one machine costs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct MachineCost {
    /// The saved host's label (a provider machine without a saved host: its ledger id).
    pub host: String,
    pub kind: MachineKind,
    /// Provider machines: the ledger id (`gpurent-…`), provider, account, the provider's id and
    /// the ledger's state text (`running`, `stopped`, `unknown`, …). `null` for pasted hosts.
    pub instance: Option<String>,
    pub provider: Option<ProviderKind>,
    pub account: Option<String>,
    pub provider_instance_id: Option<String>,
    pub ledger_state: Option<String>,
    /// The billing state at `now_ms` (`running`, `stopped`, `terminated`, …).
    pub state: Option<InstanceState>,
    /// The billing rule (`per-second`, `per-minute`, `per-hour-rounded-up`).
    pub rule: String,
    pub since_ms: i64,
    pub now_ms: i64,
    /// In `currency` (JSON: `so_far.total`, `lines[].amount`; the `usd` names beside them are
    /// older than currencies and hold the same numbers).
    pub so_far: CostBreakdown,
    /// Per hour now, in `currency`.
    #[serde(default)]
    pub per_hour_now: f64,
    /// Deprecated: the same number as `per_hour_now` (in `currency`, despite the name).
    pub usd_per_hour_now: f64,
    /// What it will have cost by the chosen time if it stays as it is, in `currency`.
    pub projected: Option<CostBreakdown>,
    /// What this machine's amounts are in: its provider's currency for a provider machine (CNY
    /// for AutoDL, USD for the others), the rate's currency for a pasted host.
    #[serde(default)]
    pub currency: Currency,
    /// A pasted host whose rate was once set in another currency: what those earlier periods
    /// cost, per currency (not in `so_far`; counted in the report's totals of their currency).
    #[serde(default)]
    pub earlier_in_other_currencies: Vec<Money>,
    /// A pasted host: the platform the user picked (its rules: `gpurent rate platforms`); a
    /// provider machine: its provider where that releases machines left off (AutoDL).
    #[serde(default)]
    pub platform: Option<Platform>,
    /// Powered off on a platform that releases a machine off N days in a row (a pasted host on
    /// it, or an AutoDL machine): when that happens (its data wiped) if it stays off. The second
    /// guard warns 3 days and 1 day before (`release_soon` notices).
    #[serde(default)]
    pub platform_release_at_ms: Option<i64>,
    /// What the provider itself reports per hour, beside gpurent's (provider machines read live).
    pub reported: Option<ProviderReported>,
    /// `vast_dph_total_may_include_storage`, `storage_price_unknown`, `state_unknown_passed_over`
    /// (an `unknown` ledger state: the state before it is assumed to continue); a pasted host:
    /// `currency_changed`, `platform_rounding_unknown` (its platform's rounding was not found: the
    /// user's rule is used), `platform_storage_while_off_unpriced` (the platform bills the disk
    /// while off and the rate has no storage).
    pub notes: Vec<String>,
}

/// An account's balance and how long it lasts at what its machines cost now. In JSON `balance`
/// and `per_hour` say the amounts under neutral names beside the older `usd` ones
/// ([`AccountBalanceJson`]).
#[derive(Debug, Clone, PartialEq, Deserialize, TS)]
#[ts(as = "AccountBalanceJson")]
pub struct AccountBalance {
    pub account: String,
    pub provider: ProviderKind,
    /// The provider's balance in USD; `null` where it has no balance endpoint (RunPod REST v2,
    /// Lambda) or it could not be read (`error`).
    pub balance_usd: Option<f64>,
    /// What the balance and `usd_per_hour` are in (the provider's currency: CNY for AutoDL,
    /// whose wallet answers in 1/1000 yuan; USD for the others).
    #[serde(default)]
    pub currency: Currency,
    /// What this account's machines cost per hour now: gpurent's machines (gpurent's rate) plus
    /// the account's instances gpurent did not start, at the provider's price while they bill.
    pub usd_per_hour: f64,
    /// balance / usd_per_hour ("runs out in about N h"); `null` when nothing bills or no balance.
    pub runs_out_in_h: Option<f64>,
    /// Where the balance came from (`vast users/current credit|balance`).
    pub source: Option<String>,
    /// The error code when the balance could not be read.
    pub error: Option<String>,
}

/// [`AccountBalance`] as JSON and TypeScript: `balance` and `per_hour` (in `currency`) beside
/// the older `balance_usd` and `usd_per_hour` (kept, the same numbers).
#[derive(Debug, Clone, Serialize, TS)]
pub struct AccountBalanceJson {
    account: String,
    provider: ProviderKind,
    /// The provider's balance, in `currency`; `null` where it has no balance endpoint or it could
    /// not be read (`error`).
    balance: Option<f64>,
    /// Deprecated: the same number as `balance`.
    balance_usd: Option<f64>,
    currency: Currency,
    /// What this account's machines cost per hour now, in `currency`.
    per_hour: f64,
    /// Deprecated: the same number as `per_hour`.
    usd_per_hour: f64,
    /// balance / per_hour ("runs out in about N h"); `null` when nothing bills or no balance.
    runs_out_in_h: Option<f64>,
    source: Option<String>,
    error: Option<String>,
}

impl From<AccountBalance> for AccountBalanceJson {
    fn from(
        AccountBalance {
            account,
            provider,
            balance_usd,
            currency,
            usd_per_hour,
            runs_out_in_h,
            source,
            error,
        }: AccountBalance,
    ) -> Self {
        AccountBalanceJson {
            account,
            provider,
            balance: balance_usd,
            balance_usd,
            currency,
            per_hour: usd_per_hour,
            usd_per_hour,
            runs_out_in_h,
            source,
            error,
        }
    }
}

/// Written as [`AccountBalanceJson`] (the neutral names beside the older ones).
impl Serialize for AccountBalance {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        AccountBalanceJson::from(self.clone()).serialize(s)
    }
}

impl AccountBalance {
    /// The balance, in [`AccountBalance::currency`].
    pub fn balance(&self) -> Option<f64> {
        self.balance_usd
    }

    /// What the account's machines cost per hour now, in [`AccountBalance::currency`].
    pub fn per_hour(&self) -> f64 {
        self.usd_per_hour
    }
}

/// The machines billed in one currency, added up (never across currencies).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct CurrencyTotal {
    pub currency: Currency,
    pub so_far: f64,
    pub per_hour_now: f64,
    /// By the chosen time (`null` when none was asked).
    pub projected: Option<f64>,
}

/// Every machine (pasted hosts with a rate and the ledger's open provider machines), the totals
/// and the account balances.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct CostReport {
    pub machines: Vec<MachineCost>,
    /// The USD machines only (before currencies every machine was USD). Not a total of every
    /// machine where some bill in yuan: `totals` is the total, one line per currency.
    pub total_so_far_usd: f64,
    /// The USD machines only; see `totals`.
    pub total_usd_per_hour_now: f64,
    /// The USD machines only; see `totals`.
    pub total_projected_usd: Option<f64>,
    /// One line per currency that has machines (CNY, USD order); empty with no machines.
    #[serde(default)]
    pub totals: Vec<CurrencyTotal>,
    /// One per connected account (read live; empty when `live` is off).
    pub balances: Vec<AccountBalance>,
    /// Accounts whose instances could not be read: their machines are costed from the ledger
    /// alone (`reported` is `null`).
    pub failed_accounts: Vec<AccountFailure>,
    /// Whether the providers were asked (reconcile, reported rates, balances).
    pub live: bool,
    /// How many of `machines` are not started by gpurent (kind `foreign`; counted in the
    /// totals: their "so far" only since gpurent first saw them, note `so_far_since_first_seen`).
    #[serde(default)]
    pub foreign_count: u32,
    /// What those cost per hour now (the provider's price; included in `total_usd_per_hour_now`).
    #[serde(default)]
    pub foreign_usd_per_hour: f64,
}

/// How to build a cost report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct CostOptions {
    /// Also project: what it will have cost this long from now if it stays as it is.
    pub ahead_ms: Option<i64>,
    /// Reconcile with the providers first and read their rates and balances.
    pub live: bool,
    /// Also list provider machines already terminated (their final cost).
    pub include_closed: bool,
}

/// What a cost report reads besides the providers' live lists.
pub trait CostReads {
    /// The pasted hosts' rates.
    fn rates(&self) -> Result<Vec<HostRate>, CoreError>;
    /// The machines not started by gpurent, as the last reconcile saw them.
    fn foreign_last_seen(&self) -> Vec<ForeignSeen>;
    /// The ledger's rows.
    fn ledger(&self) -> Result<Vec<LedgerInstance>, ProviderError>;
    /// One ledger row's state events.
    fn events(&self, row_id: &str) -> Result<Vec<InstanceEvent>, ProviderError>;
    /// The connected accounts.
    fn accounts(&self) -> Result<Vec<Account>, ProviderError>;
    /// An account's balance, read from its provider.
    fn balance(&self, account: &Account) -> Result<Option<f64>, ProviderError>;
}

/// Reconcile the ledger with every connected account: what it did, and what the providers list.
pub trait Reconcile {
    fn reconcile(&self) -> Result<(ReconcileReport, Vec<RemoteInstance>), ProviderError>;
}

/// The cost report: pasted hosts with a rate, then the ledger's provider machines, the totals
/// and (live) each account's balance.
pub fn cost_report(
    reads: &dyn CostReads,
    providers: &dyn Reconcile,
    clock: &dyn Clock,
    opts: CostOptions,
) -> Result<CostReport, ProviderError> {
    let mut machines: Vec<MachineCost> = reads
        .rates()?
        .iter()
        .map(|r| pasted(r, clock.now_unix_ms(), opts.ahead_ms))
        .collect();
    let mut failed_accounts = vec![];
    let mut seen: Vec<RemoteInstance> = vec![];
    if opts.live {
        let (report, list) = providers.reconcile()?;
        failed_accounts = report.failed_accounts;
        seen = list;
    }
    // Machines not started by gpurent bill too: the last reconcile's (this one when live;
    // between live reads, what the last one saw).
    let foreign = reads.foreign_last_seen();
    let rows = reads.ledger()?;
    for row in rows {
        if row.closed_ms.is_some() && !opts.include_closed {
            continue;
        }
        let remote = listed(&row, &seen);
        let now = clock.now_unix_ms();
        let timeline = timeline(&row, &reads.events(&row.id)?)?;
        machines.push(provider_machine(&row, timeline, remote, now, opts.ahead_ms));
    }
    let foreign_machines: Vec<MachineCost> = foreign
        .iter()
        .map(|f| foreign_machine(f, clock.now_unix_ms(), opts.ahead_ms))
        .collect();
    let foreign_count = foreign_machines.len() as u32;
    let foreign_usd_per_hour = usd_total(
        foreign_machines
            .iter()
            .filter(|m| m.currency == Currency::Usd)
            .map(|m| m.per_hour_now),
    );
    machines.extend(foreign_machines);
    let mut balances = vec![];
    if opts.live {
        for a in reads.accounts()? {
            // gpurent's machines and the ones it did not start (both in `machines`).
            let rate = usd_total(
                machines
                    .iter()
                    .filter(|m| m.account.as_deref() == Some(a.name.as_str()))
                    .filter(|m| m.currency == a.provider.spec().currency)
                    .map(|m| m.per_hour_now),
            );
            let got = reads.balance(&a);
            let (balance, error) = match got {
                Ok(b) => (b, None),
                Err(e) => (None, Some(e.code().to_string())),
            };
            balances.push(AccountBalance {
                account: a.name.clone(),
                provider: a.provider,
                balance_usd: balance,
                currency: a.provider.spec().currency,
                usd_per_hour: rate,
                runs_out_in_h: balance.and_then(|b| priced::runs_out_in_h(b, rate)),
                source: balance.map(|_| {
                    a.provider
                        .spec()
                        .balance_source
                        .unwrap_or(a.provider.as_str())
                        .to_string()
                }),
                error,
            });
        }
    }
    let totals = currency_totals(&machines, opts.ahead_ms.is_some());
    let usd = totals.iter().find(|t| t.currency == Currency::Usd);
    Ok(CostReport {
        total_so_far_usd: usd.map(|t| t.so_far).unwrap_or(0.0),
        total_usd_per_hour_now: usd.map(|t| t.per_hour_now).unwrap_or(0.0),
        total_projected_usd: opts
            .ahead_ms
            .map(|_| usd.and_then(|t| t.projected).unwrap_or(0.0)),
        totals,
        machines,
        balances,
        failed_accounts,
        live: opts.live,
        foreign_count,
        foreign_usd_per_hour,
    })
}

/// What the provider lists of a ledger row (its provider and id), among `seen`.
pub fn listed<'a>(row: &LedgerInstance, seen: &'a [RemoteInstance]) -> Option<&'a RemoteInstance> {
    let pid = row.provider_instance_id.as_ref()?;
    seen.iter()
        .find(|s| s.provider == row.provider && &s.id == pid)
}

/// What a pasted host costs at `now`, at each of its rate periods (`ahead_ms`: also project to
/// that long from now).
pub fn pasted(r: &HostRate, now: i64, ahead_ms: Option<i64>) -> MachineCost {
    let by_ms = ahead_ms.map(|a| now + a.max(0));
    // Each rate period at its own rate (an earlier `rate set` keeps its own), in the current
    // rate's currency; periods in another currency are said apart (never converted).
    let periods = r.periods();
    let currency = r.rate.currency;
    let t = r.timeline();
    let sum = |until: i64| {
        merge_breakdowns(
            until,
            periods
                .iter()
                .filter(|p| p.currency == currency)
                .map(|p| cost_until(&p.timeline, &p.tariff, Traffic::default(), now, until)),
        )
    };
    let earlier = sum_by_currency(periods.iter().filter(|p| p.currency != currency).map(|p| {
        Money::new(
            cost_so_far(&p.timeline, &p.tariff, Traffic::default(), now).total_usd,
            p.currency,
        )
    }));
    let tariff = periods
        .last()
        .map(|p| p.tariff.clone())
        .unwrap_or_else(|| r.rate.tariff());
    let mut notes = vec![];
    if !earlier.is_empty() {
        notes.push("currency_changed".to_string());
    }
    let platform_rules = r.rate.platform.and_then(|p| platforms::rules_for(p).ok());
    if let Some(rules) = &platform_rules {
        if rules.increment.is_none() {
            notes.push("platform_rounding_unknown".to_string());
        }
        if rules.storage_while_off == Some(true) && r.rate.storage_usd_per_day.is_none() {
            notes.push("platform_storage_while_off_unpriced".to_string());
        }
    }
    let platform_release_at_ms = platform_rules
        .as_ref()
        .zip(r.stopped_ms)
        .and_then(|(rules, stopped)| platforms::release_at_ms(rules, stopped));
    MachineCost {
        host: r.host.clone(),
        kind: MachineKind::Pasted,
        instance: None,
        provider: None,
        account: None,
        provider_instance_id: None,
        ledger_state: None,
        state: state_at(&t, now),
        rule: r.rate.rule.rule_name().to_string(),
        since_ms: r.since_ms,
        now_ms: now,
        so_far: sum(now),
        per_hour_now: usd_per_hour_now(&t, &tariff, now),
        usd_per_hour_now: usd_per_hour_now(&t, &tariff, now),
        projected: by_ms.map(sum),
        currency,
        notes,
        earlier_in_other_currencies: earlier,
        platform: r.rate.platform,
        platform_release_at_ms,
        reported: None,
    }
}

/// A ledger row's timeline and tariff (also what budgets count).
pub fn timeline(
    row: &LedgerInstance,
    events: &[InstanceEvent],
) -> Result<(Vec<StateChange>, Tariff, Vec<String>), ProviderError> {
    let (t, unknown) = priced::timeline(events);
    let (tariff, mut notes) = priced::tariff(row)?;
    if unknown {
        notes.push("state_unknown_passed_over".into());
    }
    Ok((t, tariff, notes))
}

/// What a ledger machine costs at `now`, from its [`timeline`] (`remote`: what its provider
/// lists now, for the provider's own rate; `ahead_ms`: also project).
pub fn provider_machine(
    row: &LedgerInstance,
    (t, tariff, notes): (Vec<StateChange>, Tariff, Vec<String>),
    remote: Option<&RemoteInstance>,
    now: i64,
    ahead_ms: Option<i64>,
) -> MachineCost {
    let compute = tariff.time.iter().find(|c| c.meter == "compute");
    // A provider that releases a machine left powered off N days (AutoDL: 15, unverified):
    // when this one would go, counted from the stop that is still in force.
    let platform = platforms::Platform::parse(row.provider.as_str());
    let stopped_since = t
        .last()
        .filter(|c| c.state == crate::billing::InstanceState::Stopped)
        .map(|c| c.at_ms);
    let platform_release_at_ms = row
        .provider
        .spec()
        .release_after_days_off
        .zip(stopped_since)
        .map(|(d, at)| at + i64::from(d) * 86_400_000);
    MachineCost {
        host: row.host_label.clone().unwrap_or_else(|| row.id.clone()),
        kind: MachineKind::Provider,
        instance: Some(row.id.clone()),
        provider: Some(row.provider),
        account: Some(row.account.clone()),
        provider_instance_id: row.provider_instance_id.clone(),
        ledger_state: Some(row.state.as_str().to_string()),
        state: state_at(&t, now),
        rule: compute
            .map(|c| c.increment.rule_name())
            .unwrap_or("per-second")
            .to_string(),
        since_ms: t.first().map(|c| c.at_ms).unwrap_or(row.created_ms),
        now_ms: now,
        so_far: cost_so_far(&t, &tariff, Traffic::default(), now),
        per_hour_now: usd_per_hour_now(&t, &tariff, now),
        usd_per_hour_now: usd_per_hour_now(&t, &tariff, now),
        projected: ahead_ms
            .map(|a| cost_until(&t, &tariff, Traffic::default(), now, now + a.max(0))),
        currency: row.provider.spec().currency,
        earlier_in_other_currencies: vec![],
        platform: platform.filter(|_| row.provider.spec().release_after_days_off.is_some()),
        platform_release_at_ms,
        reported: remote.and_then(|r| {
            r.price_per_hour_usd.map(|p| {
                // The offer's rate (Vast: dph_total, storage included — what the
                // provider reports), not the compute meter alone.
                priced::reported(row.provider, p, row.price_per_hour_usd, row.state)
            })
        }),
        notes,
    }
}

/// A machine not started by gpurent, priced as the provider reports it: per hour now while it
/// bills its GPU; "so far" only since gpurent first saw it (what it cost before is not known).
pub fn foreign_machine(f: &ForeignSeen, now: i64, ahead_ms: Option<i64>) -> MachineCost {
    let r = &f.foreign.instance;
    let per_hour = f.usd_per_hour();
    let so_far = f.usd_until_seen + per_hour * (now - f.seen_ms).max(0) as f64 / 3_600_000.0;
    let state = match r.state {
        RemoteState::Provisioning | RemoteState::Starting => InstanceState::Provisioning,
        RemoteState::Stopped => InstanceState::Stopped,
        RemoteState::Terminated => InstanceState::Terminated,
        // Terminating, in error, unknown: it may still bill until the provider says it is gone.
        _ => InstanceState::Running,
    };
    let mut notes = vec![
        "not_started_by_gpurent".to_string(),
        "so_far_since_first_seen".to_string(),
    ];
    if f.foreign.billing && r.price_per_hour_usd.is_none() {
        notes.push("price_unknown".into());
    }
    if !f.foreign.billing {
        // A stopped machine may still bill its disk; the provider's price covers the GPU.
        notes.push("storage_price_unknown".into());
    }
    let breakdown = |until_ms: i64, usd: f64| CostBreakdown {
        until_ms,
        total_usd: usd,
        lines: vec![crate::billing::CostLine {
            meter: "compute".into(),
            billed_ms: 0,
            usd,
        }],
    };
    let rule = crate::billing::rules::for_provider(f.foreign.provider.as_str())
        .ok()
        .and_then(|rules| {
            rules
                .iter()
                .find(|r| r.meter == "compute")
                .map(|r| r.increment.rule_name())
        })
        .unwrap_or("per-second");
    MachineCost {
        host: r.label.clone().unwrap_or_else(|| r.id.clone()),
        kind: MachineKind::Foreign,
        instance: None,
        provider: Some(f.foreign.provider),
        account: Some(f.foreign.account.clone()),
        provider_instance_id: Some(r.id.clone()),
        ledger_state: None,
        state: Some(state),
        rule: rule.to_string(),
        since_ms: f.first_seen_ms,
        now_ms: now,
        so_far: breakdown(now, so_far),
        per_hour_now: per_hour,
        usd_per_hour_now: per_hour,
        currency: f.foreign.provider.spec().currency,
        earlier_in_other_currencies: vec![],
        platform: None,
        platform_release_at_ms: None,
        projected: ahead_ms.map(|a| {
            let by = now + a.max(0);
            breakdown(by, so_far + per_hour * a.max(0) as f64 / 3_600_000.0)
        }),
        // The price above is the provider's own: nothing of gpurent's to compare it with.
        reported: None,
        notes,
    }
}

/// The report's lines per currency: each machine's amounts in its own currency, a pasted host's
/// earlier periods in another currency in theirs (so far = by then: those periods ended).
fn currency_totals(machines: &[MachineCost], projected: bool) -> Vec<CurrencyTotal> {
    let so_far = sum_by_currency(machines.iter().flat_map(|m| {
        std::iter::once(Money::new(m.so_far.total(), m.currency))
            .chain(m.earlier_in_other_currencies.iter().copied())
    }));
    let per_hour = sum_by_currency(
        machines
            .iter()
            .map(|m| Money::new(m.per_hour_now, m.currency)),
    );
    let by_then = sum_by_currency(machines.iter().flat_map(|m| {
        std::iter::once(Money::new(
            m.projected.as_ref().map(|p| p.total()).unwrap_or(0.0),
            m.currency,
        ))
        .chain(m.earlier_in_other_currencies.iter().copied())
    }));
    so_far
        .iter()
        .map(|t| CurrencyTotal {
            currency: t.currency,
            so_far: t.amount,
            per_hour_now: amount_in(&per_hour, t.currency),
            projected: projected.then(|| amount_in(&by_then, t.currency)),
        })
        .collect()
}

/// One breakdown of several rate periods' costs: meters of the same name added up.
fn merge_breakdowns(
    until_ms: i64,
    parts: impl Iterator<Item = crate::billing::CostBreakdown>,
) -> crate::billing::CostBreakdown {
    let mut lines: Vec<crate::billing::CostLine> = Vec::new();
    let mut until = until_ms;
    for b in parts {
        until = until.max(b.until_ms);
        for l in b.lines {
            match lines.iter_mut().find(|x| x.meter == l.meter) {
                Some(x) => {
                    x.billed_ms += l.billed_ms;
                    x.usd += l.usd;
                }
                None => lines.push(l),
            }
        }
    }
    crate::billing::CostBreakdown {
        until_ms: until,
        total_usd: crate::billing::usd_total(lines.iter().map(|l| l.usd)),
        lines,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::billing::rates::{RateEvent, RateEventKind};
    use crate::billing::{Increment, PastedRate};
    use crate::infra::clock::FixedClock;
    use crate::providers::accounts::KeySource;
    use crate::providers::ledger::ForeignInstance;

    const HOUR: i64 = 3_600_000;
    const NOW: i64 = 1_764_000_000_000;

    /// The store and one Vast account, with no App: a pasted host at 2 USD/h for an hour, a
    /// machine gpurent did not start at 3 USD/h seen half an hour ago, a balance of 12 USD.
    struct Reads;

    impl CostReads for Reads {
        fn rates(&self) -> Result<Vec<HostRate>, CoreError> {
            let rate = PastedRate {
                usd_per_hour: 2.0,
                rule: Increment::Second,
                storage_usd_per_day: None,
                currency: Currency::Usd,
                platform: None,
            };
            Ok(vec![HostRate {
                host: "box".into(),
                rate,
                since_ms: NOW - HOUR,
                stopped_ms: None,
                history: vec![RateEvent {
                    at_ms: NOW - HOUR,
                    kind: RateEventKind::Rate,
                    rate: Some(rate),
                    source: "user".into(),
                    detail: None,
                    recorded_ms: NOW - HOUR,
                }],
            }])
        }

        fn foreign_last_seen(&self) -> Vec<ForeignSeen> {
            let instance = RemoteInstance {
                provider: ProviderKind::Vast,
                id: "77".into(),
                label: None,
                state: RemoteState::Running,
                raw_status: "running".into(),
                gpu: None,
                gpu_count: None,
                price_per_hour_usd: Some(3.0),
                ssh: None,
                host_cuda: None,
            };
            vec![ForeignSeen {
                foreign: ForeignInstance {
                    provider: ProviderKind::Vast,
                    account: "v".into(),
                    instance,
                    billing: true,
                },
                first_seen_ms: NOW - HOUR / 2,
                seen_ms: NOW - HOUR / 2,
                usd_until_seen: 0.0,
            }]
        }

        fn ledger(&self) -> Result<Vec<LedgerInstance>, ProviderError> {
            Ok(vec![])
        }

        fn events(&self, _: &str) -> Result<Vec<InstanceEvent>, ProviderError> {
            Ok(vec![])
        }

        fn accounts(&self) -> Result<Vec<Account>, ProviderError> {
            Ok(vec![Account {
                name: "v".into(),
                provider: ProviderKind::Vast,
                key_source: KeySource::Keychain,
                account_label: None,
                added_ms: None,
                checked_ms: None,
            }])
        }

        fn balance(&self, _: &Account) -> Result<Option<f64>, ProviderError> {
            Ok(Some(12.0))
        }
    }

    /// The providers answer with nothing of gpurent's; a report that is not live never asks.
    struct Providers {
        live: bool,
    }

    impl Reconcile for Providers {
        fn reconcile(&self) -> Result<(ReconcileReport, Vec<RemoteInstance>), ProviderError> {
            assert!(self.live, "a report that is not live asked the providers");
            Ok((ReconcileReport::default(), vec![]))
        }
    }

    #[test]
    fn a_live_report_adds_every_machine_per_currency_and_says_how_long_the_balance_lasts() {
        let opts = CostOptions {
            ahead_ms: Some(HOUR),
            live: true,
            include_closed: false,
        };
        let r =
            cost_report(&Reads, &Providers { live: true }, &FixedClock(NOW), opts).expect("report");
        assert_eq!(r.machines.len(), 2);
        assert_eq!(r.machines[0].kind, MachineKind::Pasted);
        assert_eq!(r.machines[1].kind, MachineKind::Foreign);
        assert_eq!((r.foreign_count, r.foreign_usd_per_hour), (1, 3.0));
        // 2 USD for the pasted host's hour, 1.5 for the half hour the other machine was seen.
        assert!(
            (r.total_so_far_usd - 3.5).abs() < 1e-9,
            "{}",
            r.total_so_far_usd
        );
        assert!((r.total_usd_per_hour_now - 5.0).abs() < 1e-9);
        assert!((r.total_projected_usd.expect("projected") - 8.5).abs() < 1e-9);
        assert_eq!(r.totals.len(), 1);
        assert_eq!(r.totals[0].currency, Currency::Usd);
        // The account pays for its own machine only (the pasted host is nobody's account).
        let b = &r.balances[0];
        assert_eq!((b.account.as_str(), b.usd_per_hour), ("v", 3.0));
        assert_eq!((b.balance_usd, b.runs_out_in_h), (Some(12.0), Some(4.0)));
        assert!(b.error.is_none());
    }

    #[test]
    fn a_report_from_the_ledger_alone_reads_no_balance_and_asks_no_provider() {
        let r = cost_report(
            &Reads,
            &Providers { live: false },
            &FixedClock(NOW),
            CostOptions::default(),
        )
        .expect("report");
        assert!(r.balances.is_empty());
        assert!(!r.live);
        assert_eq!(r.total_projected_usd, None);
        // What the last reconcile saw still counts between live reads.
        assert_eq!(r.foreign_count, 1);
    }
}
