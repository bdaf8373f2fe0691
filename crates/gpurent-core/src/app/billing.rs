//! Billing on the facade: a pasted host's own rate (the user enters it; gpurent has no provider
//! to ask), what each machine costs — so far, per hour now, and by a chosen time — through the
//! pure functions of [`crate::billing`] (provider machines: the ledger's `(at_ms, state)` rows and
//! their tariff), the budgets, and the Billing screen's view. The rows are kept by
//! [`crate::billing::rates`] and [`crate::billing::budget`].

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::providers::foreign::ForeignSeen;
use crate::app::App;
use crate::billing::budget::{self, Period};
pub use crate::billing::budget::{Budget, BudgetStatus};
use crate::billing::instance::{self as priced, ProviderReported};
use crate::billing::money::{amount_in, sum_by_currency};
use crate::billing::platforms::{self, PlatformRules};
use crate::billing::rates;
pub use crate::billing::rates::HostRate;
pub use crate::billing::spend::{spend_series, SpendPoint, SpendSeries};
use crate::billing::{
    cost_so_far, cost_until, state_at, usd_per_hour_now, usd_total, CostBreakdown, Currency,
    InstanceState, Money, PastedRate, Platform, StateChange, Tariff, Traffic,
};
use crate::infra::error::CoreError;
use crate::infra::ipc::Coded;
use crate::providers::ledger::{self, AccountFailure, LedgerInstance};
use crate::providers::{ProviderError, ProviderKind, RemoteInstance, RemoteState};
use crate::remote::RemoteError;

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

impl App {
    /// Save a pasted host's rate; it has been billed since `started_ago_ms` before now. A host
    /// marked stopped then stays stopped: the rate bills from its next start
    /// ([`App::host_rate_started`]); setting a rate never starts a machine.
    pub fn host_rate_set(
        &self,
        label: &str,
        rate: PastedRate,
        started_ago_ms: i64,
    ) -> Result<HostRate, RemoteError> {
        rate.validate()?;
        if let Some(p) = rate.platform {
            platforms::check_rule(&platforms::rules_for(p)?, rate.rule)?;
        }
        if started_ago_ms < 0 {
            return Err(RemoteError::invalid(
                "started_ago",
                "must not be in the future",
            ));
        }
        self.host_get(label)?;
        let now = self.now_ms();
        let since = now - started_ago_ms;
        self.with_store(|s| rates::set(s, label, &rate, since, now))?;
        self.host_rate_get(label)?.ok_or_else(|| {
            RemoteError::invalid("host", format!("'{label}': the rate was not saved"))
        })
    }

    /// Mark a pasted host stopped now (its compute stops billing; storage, if it has a rate, goes on).
    pub fn host_rate_stopped(&self, label: &str) -> Result<HostRate, RemoteError> {
        let now = self.now_ms();
        let stopped_now = self.with_store(|s| rates::mark_stopped(s, label, now))?;
        match self.host_rate_get(label)? {
            Some(r) if stopped_now || r.stopped_ms.is_some() => Ok(r),
            _ => Err(RemoteError::invalid(
                "host",
                format!("'{label}' has no rate set"),
            )),
        }
    }

    /// Mark a stopped pasted host running again now (the user started it on the platform): its
    /// compute bills from now at its current rate.
    pub fn host_rate_started(&self, label: &str) -> Result<HostRate, RemoteError> {
        let now = self.now_ms();
        let started_now = self.with_store(|s| rates::mark_started(s, label, now))?;
        match self.host_rate_get(label)? {
            Some(r) if started_now || r.stopped_ms.is_none() => Ok(r),
            _ => Err(RemoteError::invalid(
                "host",
                format!("'{label}' has no rate set"),
            )),
        }
    }

    /// What gpurent knows of each platform a pasted host may come from (the rate form's choice).
    pub fn platform_rules(&self) -> Result<Vec<PlatformRules>, CoreError> {
        platforms::all()
    }

    pub fn host_rate_get(&self, label: &str) -> Result<Option<HostRate>, CoreError> {
        self.with_store(|s| rates::get(s, label))
    }

    pub(crate) fn host_rates(&self) -> Result<Vec<HostRate>, CoreError> {
        self.with_store(rates::list)
    }

    fn machine_cost(&self, r: &HostRate, ahead_ms: Option<i64>) -> MachineCost {
        let now = self.now_ms();
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

    /// What one pasted host costs (`ahead_ms`: also project to that long from now).
    pub fn cost_host(
        &self,
        label: &str,
        ahead_ms: Option<i64>,
    ) -> Result<MachineCost, RemoteError> {
        let r = self.host_rate_get(label)?.ok_or_else(|| {
            RemoteError::invalid(
                "host",
                format!("'{label}' has no rate: gpurent rate set {label} 2.5 --currency CNY --rule per-hour-rounded-up"),
            )
        })?;
        Ok(self.machine_cost(&r, ahead_ms))
    }

    /// Every machine with the providers asked (reconcile, their rates, balances); `ahead_ms`:
    /// also project that far.
    pub fn cost_all(&self, ahead_ms: Option<i64>) -> Result<CostReport, ProviderError> {
        self.cost_report(CostOptions {
            ahead_ms,
            live: true,
            include_closed: false,
        })
    }

    /// The cost report: pasted hosts with a rate, then the ledger's provider machines, the totals
    /// and (live) each account's balance.
    pub fn cost_report(&self, opts: CostOptions) -> Result<CostReport, ProviderError> {
        let mut machines: Vec<MachineCost> = self
            .host_rates()?
            .iter()
            .map(|r| self.machine_cost(r, opts.ahead_ms))
            .collect();
        let mut failed_accounts = vec![];
        let mut seen: Vec<RemoteInstance> = vec![];
        if opts.live {
            let (report, list) = self.providers_reconcile()?;
            failed_accounts = report.failed_accounts;
            seen = list;
        }
        // Machines not started by gpurent bill too: the last reconcile's (this one when live;
        // between live reads, what the last one saw).
        let foreign = self.foreign_last_seen();
        let rows = self.with_db(ledger::list)?;
        for row in rows {
            if row.closed_ms.is_some() && !opts.include_closed {
                continue;
            }
            let remote = row.provider_instance_id.as_ref().and_then(|pid| {
                seen.iter()
                    .find(|s| s.provider == row.provider && &s.id == pid)
            });
            machines.push(self.instance_cost(&row, remote, opts.ahead_ms)?);
        }
        let foreign_machines: Vec<MachineCost> = foreign
            .iter()
            .map(|f| foreign_cost(f, self.now_ms(), opts.ahead_ms))
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
            for a in self.provider_list()? {
                // gpurent's machines and the ones it did not start (both in `machines`).
                let rate = usd_total(
                    machines
                        .iter()
                        .filter(|m| m.account.as_deref() == Some(a.name.as_str()))
                        .filter(|m| m.currency == a.provider.spec().currency)
                        .map(|m| m.per_hour_now),
                );
                let got = self.provider_client(&a).and_then(|c| c.balance());
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

    /// One provider machine (ledger id or provider id) or, when no ledger row matches, a pasted
    /// host with a rate. `live`: reconcile first and read the provider's own rate.
    pub fn cost_instance(
        &self,
        key: &str,
        ahead_ms: Option<i64>,
        live: bool,
    ) -> Result<MachineCost, ProviderError> {
        let Some(row) = self.with_db(|c| ledger::find(c, key))? else {
            return Ok(self.cost_host(key, ahead_ms)?);
        };
        let mut seen = vec![];
        if live {
            let (_, list) = self.providers_reconcile()?;
            seen = list;
        }
        let row = self.with_db(|c| ledger::get(c, &row.id))?.unwrap_or(row);
        let remote = row.provider_instance_id.as_ref().and_then(|pid| {
            seen.iter()
                .find(|s| s.provider == row.provider && &s.id == pid)
        });
        self.instance_cost(&row, remote, ahead_ms)
    }

    /// A ledger row's timeline and tariff (also what budgets count).
    pub(crate) fn instance_timeline(
        &self,
        row: &LedgerInstance,
    ) -> Result<(Vec<StateChange>, Tariff, Vec<String>), ProviderError> {
        let events = self.with_db(|c| ledger::events(c, &row.id))?;
        let (t, unknown) = priced::timeline(&events);
        let (tariff, mut notes) = priced::tariff(row)?;
        if unknown {
            notes.push("state_unknown_passed_over".into());
        }
        Ok((t, tariff, notes))
    }

    fn instance_cost(
        &self,
        row: &LedgerInstance,
        remote: Option<&RemoteInstance>,
        ahead_ms: Option<i64>,
    ) -> Result<MachineCost, ProviderError> {
        let now = self.now_ms();
        let (t, tariff, notes) = self.instance_timeline(row)?;
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
        Ok(MachineCost {
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
        })
    }
}

/// A machine not started by gpurent, priced as the provider reports it: per hour now while it
/// bills its GPU; "so far" only since gpurent first saw it (what it cost before is not known).
fn foreign_cost(f: &ForeignSeen, now: i64, ahead_ms: Option<i64>) -> MachineCost {
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

/// The ledger reads of a budget are store reads: their error is the store's.
fn into_core(e: ProviderError) -> CoreError {
    match e {
        ProviderError::Core(c) => c,
        other => CoreError::stored("instances", other.to_string()),
    }
}

impl App {
    /// Set (or replace) a budget (a choice to stop at 100 % made before is kept).
    pub fn budget_set(
        &self,
        host: Option<&str>,
        period: Period,
        usd: f64,
    ) -> Result<Budget, RemoteError> {
        self.budget_save(host, period, Money::new(usd, Currency::Usd), None)
    }

    /// Set (or replace) a budget in a currency: it counts only the machines billed in it.
    /// `stop_at_100`: `None` keeps the choice made before.
    pub fn budget_set_in(
        &self,
        host: Option<&str>,
        period: Period,
        limit: Money,
        stop_at_100: Option<bool>,
    ) -> Result<Budget, RemoteError> {
        self.budget_save(host, period, limit, stop_at_100)
    }

    /// The one way a budget is saved: the amount checked, the machine a saved host, then
    /// [`budget::set`].
    pub(crate) fn budget_save(
        &self,
        host: Option<&str>,
        period: Period,
        limit: Money,
        stop_at_100: Option<bool>,
    ) -> Result<Budget, RemoteError> {
        budget::check_usd(limit.amount)?;
        if let Some(h) = host {
            self.host_get(h)?;
        }
        let b = Budget {
            host: host.map(String::from),
            period,
            usd: limit.amount,
            currency: limit.currency,
        };
        let now = self.now_ms();
        self.with_store(|s| budget::set(s, &b, stop_at_100, now))?;
        Ok(b)
    }

    /// Remove a budget; `false` when there was none.
    pub fn budget_remove(&self, host: Option<&str>, period: Period) -> Result<bool, CoreError> {
        self.with_store(|s| budget::remove(s, host, period))
    }

    /// Every budget and what was spent in its current period (pasted hosts with a rate and the
    /// ledger's provider machines, by their saved host label or ledger id).
    pub fn budget_status(&self) -> Result<Vec<BudgetStatus>, CoreError> {
        Ok(self
            .budgets_saved()?
            .into_iter()
            .map(|(status, _)| status)
            .collect())
    }

    /// Every saved budget, where it stands now, and whether the user chose to stop at 100 %.
    pub(crate) fn budgets_saved(&self) -> Result<Vec<(BudgetStatus, bool)>, CoreError> {
        let saved = self.with_store(budget::list)?;
        // Pasted hosts with a rate, then provider machines (closed ones included: what they
        // spent before closing counts).
        let mut machines: Vec<budget::Billed> = self
            .host_rates()?
            .into_iter()
            .flat_map(|r| {
                let host = r.host.clone();
                r.periods().into_iter().map(move |p| budget::Billed {
                    host: host.clone(),
                    currency: p.currency,
                    timeline: p.timeline,
                    tariff: p.tariff,
                })
            })
            .collect();
        for row in self.with_db(ledger::list).map_err(into_core)? {
            let (t, tariff, _) = self.instance_timeline(&row).map_err(into_core)?;
            machines.push(budget::Billed {
                currency: row.provider.spec().currency,
                host: row.host_label.unwrap_or(row.id),
                timeline: t,
                tariff,
            });
        }
        let now = self.now_ms();
        Ok(saved
            .into_iter()
            .map(|b| (budget::status(b.budget, &machines, now), b.stop_at_100))
            .collect())
    }
}

/// A budget as the Billing screen lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct BudgetRow {
    #[serde(flatten)]
    pub status: BudgetStatus,
    /// The user chose: stop the machine(s) at 100 % (provider machines; a pasted host has no API
    /// gpurent could stop it with).
    pub stop_at_100: bool,
}

/// Everything the Billing screen shows, computed at one `now`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct BillingView {
    pub now_ms: i64,
    pub cost: CostReport,
    pub budgets: Vec<BudgetRow>,
    pub spend: SpendSeries,
    /// The currency the rate and budget forms start in (the settings' default).
    #[serde(default)]
    pub default_currency: Currency,
}

/// How many points the spend chart gets.
const SPEND_POINTS: usize = 60;

/// The Billing screen's reads: cost per machine and in total (so far, per hour now, by a chosen
/// time), the budgets with where they stand and the user's "stop at 100 %", and spend over time.
impl App {
    /// The timelines and tariffs of every machine that cost something: pasted hosts with a rate
    /// and every ledger machine, released ones included (what they spent is spent — the same
    /// machines the budgets count).
    fn billed_timelines(&self) -> Result<Vec<(Currency, Vec<StateChange>, Tariff)>, ProviderError> {
        let mut out: Vec<(Currency, Vec<StateChange>, Tariff)> = self
            .host_rates()?
            .iter()
            .flat_map(|r| r.periods())
            .map(|p| (p.currency, p.timeline, p.tariff))
            .collect();
        for row in self.with_db(ledger::list)? {
            let (t, tariff, _) = self.instance_timeline(&row)?;
            out.push((row.provider.spec().currency, t, tariff));
        }
        Ok(out)
    }

    /// The Billing screen at this moment; `ahead_ms`: also what it will have cost that long from
    /// now; `live`: ask the providers too (reconcile, their own rates, balances) — the screen does
    /// that when it opens and every 30 s, and computes from the ledger in between. The chart runs
    /// from the first machine's start (at most 30 days back) to now.
    pub fn billing_view(
        &self,
        ahead_ms: Option<i64>,
        live: bool,
    ) -> Result<BillingView, ProviderError> {
        let now = self.now_ms();
        let cost = self.cost_report(CostOptions {
            ahead_ms,
            live,
            include_closed: false,
        })?;
        let timelines = self.billed_timelines()?;
        let first = timelines
            .iter()
            .filter_map(|(_, t, _)| t.first().map(|c| c.at_ms))
            .min()
            .unwrap_or(now);
        let from = first.max(now - 30 * 86_400_000).min(now);
        Ok(BillingView {
            now_ms: now,
            cost,
            budgets: self.budget_list()?,
            spend: spend_series(&timelines, from, now, SPEND_POINTS),
            default_currency: self.default_currency(),
        })
    }

    /// [`App::billing_view`] with "by" as the user typed it (`90m`, `2.5h`, `1d`; empty: none).
    pub fn billing_view_by(
        &self,
        by: Option<&str>,
        live: bool,
    ) -> Result<BillingView, ProviderError> {
        let ahead_ms = match by.map(str::trim).filter(|b| !b.is_empty()) {
            None => None,
            Some(text) => Some(
                crate::guard::parse_duration(text)
                    .map_err(|e| CoreError::invalid("by", e.to_string()))? as i64
                    * 1000,
            ),
        };
        self.billing_view(ahead_ms, live)
    }

    /// Set (or replace) a budget, with the user's choice to stop at 100 %.
    pub fn budget_set_with(
        &self,
        host: Option<&str>,
        period: Period,
        usd: f64,
        stop_at_100: bool,
    ) -> Result<BudgetRow, RemoteError> {
        self.budget_set_row(host, period, Money::new(usd, Currency::Usd), stop_at_100)
    }

    /// Set (or replace) a budget in a currency, with the user's choice to stop at 100 %, as the
    /// Billing screen lists it.
    pub fn budget_set_row(
        &self,
        host: Option<&str>,
        period: Period,
        limit: Money,
        stop_at_100: bool,
    ) -> Result<BudgetRow, RemoteError> {
        let b = self.budget_save(host, period, limit, Some(stop_at_100))?;
        let status = self
            .budget_status()?
            .into_iter()
            .find(|s| s.budget == b)
            .ok_or_else(|| RemoteError::invalid("budget", "was not saved"))?;
        Ok(BudgetRow {
            status,
            stop_at_100,
        })
    }

    /// Every budget, where it stands, and whether the user chose to stop at 100 %.
    pub fn budget_list(&self) -> Result<Vec<BudgetRow>, CoreError> {
        Ok(self
            .budgets_saved()?
            .into_iter()
            .map(|(status, stop_at_100)| BudgetRow {
                status,
                stop_at_100,
            })
            .collect())
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
    use crate::billing::budget::Level;
    use crate::billing::Increment;

    const HOUR: i64 = 3_600_000;

    use crate::app::test_support::{app_at, save_host};

    /// A pasted host's rate billed per second, no storage, no platform.
    fn per_second(per_hour: f64, currency: Currency) -> PastedRate {
        PastedRate {
            usd_per_hour: per_hour,
            rule: Increment::Second,
            storage_usd_per_day: None,
            currency,
            platform: None,
        }
    }

    /// The guides' example through the facade: started 1 h 10 min ago, per started hour.
    #[test]
    fn pasted_host_cost_so_far_now_and_projected() {
        let tmp = tempfile::tempdir().expect("tmp");
        let t0 = 1_764_000_000_000;
        let app = app_at(tmp.path(), t0);
        save_host(&app, "box");
        let rate = PastedRate {
            usd_per_hour: 2.0,
            rule: Increment::Hour,
            storage_usd_per_day: Some(0.48),
            currency: Currency::Usd,
            platform: None,
        };
        app.host_rate_set("box", rate, 70 * 60_000).expect("set");
        assert!(app.host_rate_set("nope", rate, 0).is_err(), "unknown host");
        let c = app.cost_host("box", Some(2 * HOUR)).expect("cost");
        let compute =
            |b: &CostBreakdown| b.lines.iter().find(|l| l.meter == "compute").map(|l| l.usd);
        assert_eq!(compute(&c.so_far), Some(4.0), "1 h 10 min billed as 2 h");
        assert!((c.usd_per_hour_now - (2.0 + 0.02)).abs() < 1e-9);
        // By t0 + 2 h it has run 3 h 10 min: 4 started hours.
        assert_eq!(c.projected.as_ref().and_then(compute), Some(8.0));
        let all = app.cost_all(None).expect("all");
        assert_eq!(all.machines.len(), 1);
        assert!((all.total_so_far_usd - c.so_far.total_usd).abs() < 1e-9);
        // Stopped: compute stops, storage goes on; survives a restart of the app.
        app.host_rate_stopped("box").expect("stopped");
        drop(app);
        let app = app_at(tmp.path(), t0 + 5 * HOUR);
        let c = app.cost_host("box", None).expect("cost");
        assert_eq!(c.state, Some(InstanceState::Stopped));
        assert_eq!(compute(&c.so_far), Some(4.0));
        assert!((c.usd_per_hour_now - 0.02).abs() < 1e-9);
    }

    /// `rate set` again keeps the earlier rate for the time it applied: $1/h for the 3 h before
    /// the new rate, $3/h after (per second) — $6 at t0 + 2 h, not 2 h x $3. The history lists
    /// both, and survives a restart.
    #[test]
    fn a_new_rate_keeps_the_earlier_rate_history() {
        let tmp = tempfile::tempdir().expect("tmp");
        let t0 = 1_764_000_000_000;
        let app = app_at(tmp.path(), t0);
        save_host(&app, "box");
        let one = per_second(1.0, Currency::Usd);
        app.host_rate_set("box", one, 2 * HOUR).expect("set");
        drop(app);
        let app = app_at(tmp.path(), t0 + HOUR);
        let three = PastedRate {
            usd_per_hour: 3.0,
            ..one
        };
        let r = app.host_rate_set("box", three, 0).expect("set again");
        assert_eq!(r.history.len(), 2, "{r:?}");
        drop(app);
        let app = app_at(tmp.path(), t0 + 2 * HOUR);
        let c = app.cost_host("box", Some(HOUR)).expect("cost");
        assert!((c.so_far.total_usd - 6.0).abs() < 1e-6, "{c:?}");
        assert!((c.usd_per_hour_now - 3.0).abs() < 1e-9);
        let projected = c.projected.as_ref().map(|p| p.total_usd).unwrap_or(0.0);
        assert!((projected - 9.0).abs() < 1e-6, "{c:?}");
        // The budgets and the spend chart count the same.
        app.budget_set(Some("box"), Period::Month, 100.0)
            .expect("budget");
        let st = app.budget_status().expect("status");
        assert!((st[0].spent_usd - 6.0).abs() < 1e-6, "{st:?}");
        let r = app.host_rate_get("box").expect("get").expect("rate");
        assert_eq!(r.history[0].rate.map(|x| x.usd_per_hour), Some(1.0));
        assert_eq!(r.history[1].rate.map(|x| x.usd_per_hour), Some(3.0));
        assert_eq!(r.history[1].at_ms, t0 + HOUR);
    }

    /// A pasted host its guard powered off stops costing from the guard's record — only with the
    /// machine's own evidence: a record from another boot (then running again from its boot
    /// time); a record on the current boot changes nothing until the host stops answering; a
    /// host that answers again on that boot did not go off (net nothing).
    #[test]
    fn a_guard_poweroff_stops_a_pasted_hosts_billing_on_the_machines_evidence() {
        use crate::billing::rates::RateEventKind;
        use crate::guard::ssh::Fetched;
        let tmp = tempfile::tempdir().expect("tmp");
        let t0 = 1_764_000_000_000;
        let app = app_at(tmp.path(), t0);
        save_host(&app, "box");
        let rate = per_second(2.0, Currency::Usd);
        app.host_rate_set("box", rate, 3 * HOUR).expect("rate");
        // The host's clock runs 100 s ahead of this computer's.
        let host_now = t0 / 1000 + 100;
        let on_boot = |boot: &str, uptime_s: i64| Fetched {
            installed: true,
            host_now_s: Some(host_now),
            boot_id: Some(boot.into()),
            uptime_s: Some(uptime_s),
            poweroff_at_s: Some(host_now - 2 * 3600),
            poweroff_boot_id: Some("boot-a".into()),
            ..Fetched::default()
        };
        let cost = |app: &App| app.cost_host("box", None).expect("cost").so_far.total_usd;
        // The record on the boot it was written on: a power-off under way, not yet evidence.
        app.guard_poweroff_billing("box", &on_boot("boot-a", 9000))
            .expect("same boot");
        assert!((cost(&app) - 6.0).abs() < 1e-6, "{}", cost(&app));
        // The machine answers on another boot, up for 30 min: off from the record's time until
        // its boot — billed 1 h before and 30 min after: $3, not $6.
        let later = on_boot("boot-b", 1800);
        app.guard_poweroff_billing("box", &later).expect("new boot");
        app.guard_poweroff_billing("box", &later)
            .expect("again: once");
        assert!((cost(&app) - 3.0).abs() < 1e-6, "{}", cost(&app));
        let r = app.host_rate_get("box").expect("get").expect("rate");
        let guard: Vec<(RateEventKind, i64)> = r
            .history
            .iter()
            .filter(|e| e.source == "guard")
            .map(|e| (e.kind, e.at_ms))
            .collect();
        assert_eq!(
            guard,
            [
                (RateEventKind::PoweredOff, t0 - 2 * HOUR),
                (RateEventKind::Running, t0 - HOUR / 2)
            ]
        );
        assert_eq!(
            app.cost_host("box", None).expect("c").state,
            Some(InstanceState::Running)
        );

        // Another host: the record seen under way, then no answer: off from the record's time.
        save_host(&app, "box2");
        app.host_rate_set("box2", rate, 3 * HOUR).expect("rate");
        let c2 = |app: &App| app.cost_host("box2", None).expect("cost").so_far.total_usd;
        assert!(
            !app.guard_poweroff_no_answer("box2").expect("no record"),
            "no evidence"
        );
        app.guard_poweroff_billing("box2", &on_boot("boot-a", 9000))
            .expect("under way");
        assert!(app.guard_poweroff_no_answer("box2").expect("no answer"));
        assert!((c2(&app) - 2.0).abs() < 1e-6, "{}", c2(&app));
        // It answers again on the same boot: it did not go off — billed throughout.
        app.guard_poweroff_billing("box2", &on_boot("boot-a", 9000))
            .expect("same boot again");
        assert!((c2(&app) - 6.0).abs() < 1e-6, "{}", c2(&app));
    }

    /// Money in two currencies is never added up: a CNY pasted host and a USD provider machine
    /// are two lines (totals, chart); a budget in CNY counts only the CNY host, one in USD only
    /// the provider machine; the `usd` totals stay USD only.
    #[test]
    fn two_currencies_are_two_lines_and_a_budget_counts_its_own() {
        use crate::providers::{ledger::LedgerState, ProviderKind};
        let tmp = tempfile::tempdir().expect("tmp");
        // 2026-12-01T10:00Z: both have run since 07:00Z.
        let now = 1_796_119_200_000;
        let app = app_at(tmp.path(), now);
        save_host(&app, "autodl");
        let yuan = per_second(2.5, Currency::Cny);
        app.host_rate_set("autodl", yuan, 3 * HOUR).expect("rate");
        crate::app::test_support::rental(
            &app,
            "pod",
            ProviderKind::Lambda,
            LedgerState::Running,
            now - 3 * HOUR,
        );
        let r = app
            .cost_report(CostOptions {
                ahead_ms: Some(HOUR),
                live: false,
                include_closed: false,
            })
            .expect("report");
        let host = r
            .machines
            .iter()
            .find(|m| m.host == "autodl")
            .expect("host");
        assert_eq!(host.currency, Currency::Cny);
        let pod = r.machines.iter().find(|m| m.host == "pod").expect("pod");
        assert_eq!(pod.currency, Currency::Usd);
        let lines: Vec<(Currency, f64, f64, Option<f64>)> = r
            .totals
            .iter()
            .map(|t| (t.currency, t.so_far, t.per_hour_now, t.projected))
            .collect();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!(lines[0].0, Currency::Cny);
        assert!((lines[0].1 - 7.5).abs() < 1e-6, "{lines:?}");
        assert!((lines[0].2 - 2.5).abs() < 1e-9, "{lines:?}");
        assert!((lines[0].3.unwrap_or(0.0) - 10.0).abs() < 1e-6, "{lines:?}");
        assert_eq!(lines[1].0, Currency::Usd);
        assert!((lines[1].1 - 0.44 * 3.0).abs() < 1e-6, "{lines:?}");
        assert!((r.total_so_far_usd - 0.44 * 3.0).abs() < 1e-6, "USD only");
        assert!((r.total_usd_per_hour_now - 0.44).abs() < 1e-9, "USD only");
        // Budgets: in CNY the provider machine is not counted; in USD the pasted host is not.
        let cny = app
            .budget_set_in(None, Period::Day, Money::new(10.0, Currency::Cny), None)
            .expect("cny");
        assert_eq!(cny.currency, Currency::Cny);
        app.budget_set(None, Period::Month, 2.0).expect("usd");
        let st = app.budget_status().expect("status");
        let day = st
            .iter()
            .find(|b| b.budget.period == Period::Day)
            .expect("day");
        assert_eq!(day.budget.currency, Currency::Cny);
        assert!((day.spent_usd - 7.5).abs() < 1e-6, "{day:?}");
        assert_eq!(day.level, Level::Ok, "7.5 of 10 is under 80 %");
        let month = st
            .iter()
            .find(|b| b.budget.period == Period::Month)
            .expect("month");
        assert_eq!(month.budget.currency, Currency::Usd);
        assert!((month.spent_usd - 0.44 * 3.0).abs() < 1e-6, "{month:?}");
        // The chart: one curve per currency, the USD curve as `points`.
        let v = app.billing_view(None, false).expect("view");
        let ends: Vec<(Currency, f64)> = v
            .spend
            .by_currency
            .iter()
            .map(|c| (c.currency, c.points.last().map(|p| p.usd).unwrap_or(0.0)))
            .collect();
        assert_eq!(ends.len(), 2, "{ends:?}");
        assert!((ends[0].1 - 7.5).abs() < 1e-6 && ends[0].0 == Currency::Cny);
        let last_usd = v.spend.points.last().map(|p| p.usd).unwrap_or(0.0);
        assert!((last_usd - 0.44 * 3.0).abs() < 1e-6, "{last_usd}");
    }

    /// A host's rate set again in another currency: the earlier period stays in its own
    /// currency, beside (never inside) the new one, and in that currency's total.
    #[test]
    fn a_rate_in_another_currency_keeps_the_earlier_period_apart() {
        let tmp = tempfile::tempdir().expect("tmp");
        let t0 = 1_764_000_000_000;
        let app = app_at(tmp.path(), t0);
        save_host(&app, "box");
        let usd = per_second(1.0, Currency::Usd);
        app.host_rate_set("box", usd, 2 * HOUR).expect("usd");
        let cny = PastedRate {
            usd_per_hour: 7.0,
            currency: Currency::Cny,
            platform: None,
            ..usd
        };
        app.host_rate_set("box", cny, HOUR).expect("cny");
        let c = app.cost_host("box", None).expect("cost");
        assert_eq!(c.currency, Currency::Cny);
        assert!((c.so_far.total_usd - 7.0).abs() < 1e-6, "{c:?}");
        assert_eq!(
            c.earlier_in_other_currencies,
            [Money::new(1.0, Currency::Usd)]
        );
        assert!(c.notes.contains(&"currency_changed".to_string()));
        let r = app.cost_report(CostOptions::default()).expect("report");
        assert_eq!(r.totals.len(), 2, "{:?}", r.totals);
        assert!((r.total_so_far_usd - 1.0).abs() < 1e-6);
    }

    /// A pasted host on AutoDL: its platform is kept with the rate (and survives a restart); its
    /// rounding was not found, so the user's rule bills and the report says so; powered off, it
    /// says when AutoDL releases it (15 days off, unverified row of data/platform-rules.csv).
    #[test]
    fn a_pasted_host_on_a_platform_carries_its_rules() {
        let tmp = tempfile::tempdir().expect("tmp");
        let t0 = 1_764_000_000_000;
        let app = app_at(tmp.path(), t0);
        save_host(&app, "adl");
        let rate = PastedRate {
            platform: Some(Platform::Autodl),
            ..per_second(1.98, Currency::Cny)
        };
        app.host_rate_set("adl", rate, HOUR).expect("rate");
        app.host_rate_stopped("adl").expect("stopped");
        drop(app);
        let app = app_at(tmp.path(), t0 + HOUR);
        let c = app.cost_host("adl", None).expect("cost");
        assert_eq!(c.platform, Some(Platform::Autodl));
        assert!((c.so_far.total_usd - 1.98).abs() < 1e-9, "{c:?}");
        assert!(c.notes.contains(&"platform_rounding_unknown".to_string()));
        assert_eq!(c.platform_release_at_ms, Some(t0 + 15 * 86_400_000));
        let r = app.host_rate_get("adl").expect("get").expect("rate");
        assert_eq!(r.rate.platform, Some(Platform::Autodl));
        assert_eq!(
            r.history[0].rate.and_then(|x| x.platform),
            Some(Platform::Autodl)
        );
        assert_eq!(app.platform_rules().expect("rules").len(), 5);
    }

    /// A new rate on a host the user marked stopped does not start it: the rate is recorded for
    /// the next start (compute stays off, the stop keeps its time, so the platform's "released
    /// after N days off" still counts from the real stop); starting is its own action.
    #[test]
    fn a_new_rate_on_a_stopped_host_bills_from_its_next_start() {
        let tmp = tempfile::tempdir().expect("tmp");
        let t0 = 1_764_000_000_000;
        let app = app_at(tmp.path(), t0);
        save_host(&app, "adl");
        let two = PastedRate {
            storage_usd_per_day: Some(0.48),
            platform: Some(Platform::Autodl),
            ..per_second(2.0, Currency::Cny)
        };
        app.host_rate_set("adl", two, 2 * HOUR).expect("rate");
        app.host_rate_stopped("adl").expect("stopped");
        drop(app);
        let app = app_at(tmp.path(), t0 + HOUR);
        let three = PastedRate {
            usd_per_hour: 3.0,
            ..two
        };
        let r = app.host_rate_set("adl", three, 0).expect("new rate");
        assert_eq!(r.stopped_ms, Some(t0), "still stopped, since the real stop");
        let compute =
            |b: &CostBreakdown| b.lines.iter().find(|l| l.meter == "compute").map(|l| l.usd);
        let c = app.cost_host("adl", None).expect("cost");
        assert_eq!(c.state, Some(InstanceState::Stopped), "{c:?}");
        assert!(
            (c.usd_per_hour_now - 0.02).abs() < 1e-9,
            "storage only: {c:?}"
        );
        assert_eq!(c.platform_release_at_ms, Some(t0 + 15 * 86_400_000));
        drop(app);
        let app = app_at(tmp.path(), t0 + 3 * HOUR);
        let c = app.cost_host("adl", None).expect("cost");
        assert!(
            (compute(&c.so_far).unwrap_or(0.0) - 4.0).abs() < 1e-9,
            "{c:?}"
        );
        // Storage: the old rate until the new one, then the new one (both 0.02/h here).
        assert!(
            (c.so_far.total_usd - (4.0 + 5.0 * 0.02)).abs() < 1e-9,
            "{c:?}"
        );
        // "I started it": compute bills from now at the new rate; once.
        let r = app.host_rate_started("adl").expect("started");
        assert_eq!(r.stopped_ms, None);
        assert!(app.host_rate_started("adl").is_ok(), "already running");
        assert!(app.host_rate_started("nope").is_err(), "no rate");
        drop(app);
        let app = app_at(tmp.path(), t0 + 4 * HOUR);
        let c = app.cost_host("adl", None).expect("cost");
        assert_eq!(c.state, Some(InstanceState::Running), "{c:?}");
        assert!(
            (compute(&c.so_far).unwrap_or(0.0) - (4.0 + 3.0)).abs() < 1e-9,
            "{c:?}"
        );
        assert!((c.per_hour_now - 3.02).abs() < 1e-9, "{c:?}");
        assert_eq!(c.platform_release_at_ms, None);
        // Stopped again, a rate back-dated to when it ran (before the stop) is a correction: it
        // replaces the stop too, so the host runs at it from then (the existing correction rule).
        app.host_rate_stopped("adl").expect("stopped");
        let r = app.host_rate_set("adl", two, HOUR / 2).expect("correction");
        assert_eq!(r.stopped_ms, None, "{r:?}");
    }

    /// Every single item's amounts are in neutral fields beside the older `usd` ones (kept, with
    /// the same numbers): a yuan rate, machine, budget, budget status, spend point, notice and
    /// balance say `per_hour`, `total`, `amount`, `spent` … with their `currency`.
    #[test]
    fn single_items_say_their_amounts_in_neutral_fields_beside_the_usd_ones() {
        use crate::second_guard::notice::{Notice, NoticeKind};
        let tmp = tempfile::tempdir().expect("tmp");
        // 2026-12-01T10:00Z: the host has run since 07:00Z at ¥2.5/h and ¥0.48/day storage.
        let now = 1_796_119_200_000;
        let app = app_at(tmp.path(), now);
        save_host(&app, "adl");
        let yuan = PastedRate {
            storage_usd_per_day: Some(0.48),
            ..per_second(2.5, Currency::Cny)
        };
        app.host_rate_set("adl", yuan, 3 * HOUR).expect("rate");
        let close =
            |v: &serde_json::Value, want: f64| v.as_f64().is_some_and(|x| (x - want).abs() < 1e-9);
        let r = serde_json::to_value(app.host_rate_get("adl").expect("get")).expect("json");
        assert!(close(&r["rate"]["per_hour"], 2.5), "{r}");
        assert!(close(&r["rate"]["usd_per_hour"], 2.5), "kept: {r}");
        assert!(close(&r["rate"]["storage_per_day"], 0.48), "{r}");
        assert!(close(&r["history"][0]["rate"]["per_hour"], 2.5), "{r}");
        let c =
            serde_json::to_value(app.cost_host("adl", Some(HOUR)).expect("cost")).expect("json");
        assert_eq!(c["currency"], "CNY");
        assert!(close(&c["so_far"]["total"], 7.5 + 0.06), "{c}");
        assert!(close(&c["so_far"]["total_usd"], 7.5 + 0.06), "kept: {c}");
        assert!(close(&c["so_far"]["lines"][0]["amount"], 7.5), "{c}");
        assert!(close(&c["per_hour_now"], 2.52), "{c}");
        assert!(close(&c["projected"]["total"], 10.0 + 0.08), "{c}");
        let b = app
            .budget_set_in(None, Period::Day, Money::new(10.0, Currency::Cny), None)
            .expect("budget");
        let b = serde_json::to_value(b).expect("json");
        assert!(close(&b["amount"], 10.0) && close(&b["usd"], 10.0), "{b}");
        let row = serde_json::to_value(&app.budget_list().expect("list")[0]).expect("json");
        assert!(close(&row["spent"], 7.56), "{row}");
        assert!(close(&row["spent_usd"], 7.56), "kept: {row}");
        assert!(close(&row["budget"]["amount"], 10.0), "{row}");
        let v = serde_json::to_value(app.billing_view(None, false).expect("view")).expect("json");
        let cny = &v["spend"]["by_currency"][0];
        assert_eq!(cny["currency"], "CNY");
        assert!(close(&cny["points"][59]["amount"], 7.56), "{cny}");
        let mut n = Notice::new("k".into(), NoticeKind::BudgetOver);
        n.spent_usd = Some(12.0);
        n.budget_usd = Some(10.0);
        n.currency = Some(Currency::Cny);
        let n = serde_json::to_value(n).expect("json");
        assert!(
            close(&n["spent"], 12.0) && close(&n["budget_amount"], 10.0),
            "{n}"
        );
        let bal = AccountBalance {
            account: "vast".into(),
            provider: ProviderKind::Vast,
            balance_usd: Some(10.0),
            currency: Currency::Usd,
            usd_per_hour: 0.5,
            runs_out_in_h: Some(20.0),
            source: None,
            error: None,
        };
        let bal = serde_json::to_value(bal).expect("json");
        assert!(
            close(&bal["balance"], 10.0) && close(&bal["per_hour"], 0.5),
            "{bal}"
        );
    }

    /// Budgets count what was spent since the start of the UTC day / month.
    #[test]
    fn budgets_count_the_current_period() {
        let tmp = tempfile::tempdir().expect("tmp");
        // 2026-12-01T10:00Z; the host has run since 07:00Z at $1/h per second: $3 today.
        let now = 1_796_119_200_000;
        let app = app_at(tmp.path(), now);
        save_host(&app, "box");
        let rate = per_second(1.0, Currency::Usd);
        app.host_rate_set("box", rate, 3 * HOUR).expect("rate");
        app.budget_set(Some("box"), Period::Day, 3.5).expect("day");
        app.budget_set(None, Period::Month, 100.0).expect("month");
        assert!(app.budget_set(Some("nope"), Period::Day, 1.0).is_err());
        assert!(app.budget_set(None, Period::Day, 0.0).is_err());
        let st = app.budget_status().expect("status");
        assert_eq!(st.len(), 2);
        let day = st
            .iter()
            .find(|b| b.budget.period == Period::Day)
            .expect("day");
        assert_eq!(day.budget.host.as_deref(), Some("box"));
        assert!((day.spent_usd - 3.0).abs() < 1e-9, "{day:?}");
        assert_eq!(day.level, Level::Warn, "3.0 of 3.5 is over 80 %");
        let month = st
            .iter()
            .find(|b| b.budget.period == Period::Month)
            .expect("month");
        assert_eq!(month.level, Level::Ok);
        // Running since yesterday 22:00Z: today counts only from midnight.
        app.host_rate_set("box", rate, 12 * HOUR).expect("rate");
        let st = app.budget_status().expect("status");
        let day = st
            .iter()
            .find(|b| b.budget.period == Period::Day)
            .expect("day");
        assert!((day.spent_usd - 10.0).abs() < 1e-9, "{day:?}");
        assert_eq!(day.level, Level::Over);
        assert!(app.budget_remove(Some("box"), Period::Day).expect("rm"));
        assert_eq!(app.budget_status().expect("status").len(), 1);
    }
}
