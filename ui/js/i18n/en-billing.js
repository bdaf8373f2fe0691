// English texts of the Billing step, the budget banner and the second guard's notices.
/** @type {Record<string, string>} */
export default {
  'billing.title': 'Billing',
  'billing.intro':
    'What every machine costs right now, what it will have cost by a time you choose, and your budgets. The meter runs until a machine is stopped or released: the one you forgot is the biggest cost.',
  'billing.now.title': 'Cost now',
  'billing.by': 'By (from now)',
  'billing.total.so_far': 'Cost so far',
  'billing.total.per_hour': 'Per hour right now',
  'billing.total.by': 'By {by} from now',
  'billing.col.machine': 'Machine',
  'billing.col.state': 'State',
  'billing.col.rule': 'Billed',
  'billing.col.so_far': 'So far',
  'billing.col.per_hour': 'Now',
  'billing.col.by': 'In {by}',
  'billing.col.price': 'Price',
  'billing.col.actions': 'Stop or release',
  'billing.empty': 'No machine has a cost yet. Set the rate of a pasted host below, or rent one in Hosts.',
  'billing.kind.pasted': 'pasted host, your rate',
  'billing.state.running': 'running',
  'billing.state.stopped': 'stopped',
  'billing.state.stopped.storage': 'stopped (storage still bills)',
  'billing.state.provisioning': 'starting',
  'billing.state.intent': 'being created',
  'billing.state.terminated': 'released',
  'billing.state.create_failed': 'not created',
  'billing.state.unknown': 'unknown',
  'billing.state.none': 'not started',
  'billing.rule.per-second': 'per second',
  'billing.rule.per-minute': 'per minute',
  'billing.rule.per-hour-rounded-up': 'per started hour',

  'billing.pasted.stop': 'I stopped it',
  'billing.pasted.release': 'Release it in the platform’s console',
  'billing.pasted.stop.title': 'Mark {host} as stopped',
  'billing.pasted.stop.how':
    'gpurent has no API for a pasted host, so it cannot stop it for you. Stop it in the platform’s console first (on some platforms “shut down” stops the GPU charge); then mark it here so the cost stops counting.',
  'billing.pasted.stop.storage': 'From now on only its storage counts, every day until you release it there.',
  'billing.pasted.stop.nostorage':
    'From now on it counts nothing. If the platform charges for a stopped machine’s disk, set a storage rate.',
  'billing.pasted.stop.yes': 'It is stopped on the platform',
  // A stopped pasted host is started by the user (a new rate never starts it).
  'billing.pasted.start': 'I started it',
  'billing.pasted.start.note': 'You started it again on the platform: its compute bills from now.',
  'billing.rate.while_stopped':
    'A new rate on a machine marked stopped bills from its next start: press “I started it” when it runs again.',
  'billing.confirm.cancel': 'Cancel',

  'billing.stop': 'Stop',
  'billing.release': 'Release',
  'billing.stop.title': 'Stop {id}?',
  'billing.stop.yes': 'Stop it',
  'billing.money.stop': 'Stopping {id}: the GPU ({price}/h) stops billing.',
  'billing.money.stop.disk': 'Its {disk} GB disk is kept and costs {storage} per month while stopped.',
  'billing.money.stop.disk_unknown': 'Its {disk} GB disk is kept; the provider may still charge for it while stopped.',
  'billing.money.stop.disk_wiped': 'Its {disk} GB container disk is wiped when it stops: download your results first.',

  'billing.chart.title': 'Spend over time',
  'billing.chart.empty': 'Nothing spent yet.',
  'billing.chart.now': 'now ({at})',

  'billing.budgets.title': 'Budgets',
  'billing.budgets.intro':
    'A limit per machine or in total, per day or per month (UTC). At 80 % and 100 % a banner shows on every screen and your computer notifies you.',
  'billing.budgets.none': 'No budget set.',
  'billing.budget.per.day': 'today',
  'billing.budget.per.month': 'this month',
  'billing.budget.name.host': '{host}, {per}',
  'billing.budget.name.total': 'All machines, {per}',
  'billing.budget.spent': '{spent} of {budget} ({pct} %)',
  'billing.budget.remove': 'Remove',
  'billing.budget.stops': 'stops at 100 %',
  'billing.budget.scope': 'For',
  'billing.budget.scope.total': 'All machines',
  'billing.budget.period': 'Per',
  'billing.budget.amount': 'Budget',
  'billing.budget.currency.note':
    'A budget is in one currency and counts only the machines billed in it: nothing is converted. Rented machines bill in US dollars; a pasted host in the currency of its rate.',
  'billing.platform': 'Platform',
  'billing.platform.none': 'Not said',
  'billing.platform.rounding': '{platform} bills {rule}.',
  'billing.platform.rounding_unknown':
    'How {platform} rounds the time it bills is not known to gpurent: your choice below applies.',
  'billing.platform.release_days':
    '{platform} releases a machine powered off {days} days in a row, and wipes its data.',
  'billing.platform.no_gpu':
    '{platform}’s no-GPU mode (powered on without the GPU, for setting up and uploading) costs about {price}/h — from its console only.',
  'billing.platform.release': 'Powered off: {platform} releases it and wipes its data around {at} if it stays off.',
  'billing.platform.unverified': 'Not confirmed in the platform’s own documentation.',
  'platform.autodl': 'AutoDL',
  'platform.gpushare': 'Gpushare (hengyuan)',
  'platform.matpool': 'Matpool',
  'platform.featurize': 'Featurize',
  'platform.other': 'Other',
  'billing.currency': 'Currency',
  'billing.earlier': 'earlier, at a rate in another currency: {amount}',
  'currency.CNY': 'CNY (¥, yuan)',
  'currency.USD': 'USD ($, US dollar)',
  'billing.budget.save': 'Save budget',
  'billing.budget.stop': 'Stop the machine at 100 %',
  'billing.budget.stop.note':
    'Only if you tick it. Rented machines are stopped through the provider (the stop is confirmed by its answer). A stop is not always safe for your files: Vast keeps the disk (and bills it), RunPod wipes the container disk (only a network volume survives) — download what you need first. A pasted host cannot be stopped by gpurent: you are notified instead.',
  'billing.level.ok': 'ok',
  'billing.level.warn': '80 % reached',
  'billing.level.over': 'used up',

  'billing.banner.warn': 'Budget {name}: {pct} % spent ({spent} of {budget}).',
  'billing.banner.over': 'Budget {name} is used up: {spent} of {budget} ({pct} %).',
  'billing.banner.open': 'Open Billing',

  'billing.rate.title': 'Rate of a pasted host',
  'billing.rate.nohosts': 'Add a host in Hosts first; then enter what its platform charges.',
  'billing.rate.host': 'Host',
  'billing.rate.amount': 'Per hour',
  'billing.rate.rule': 'Billed',
  'billing.rate.storage': 'Storage per day',
  'billing.rate.storage.none': 'none',
  'billing.rate.save': 'Save rate',
  'billing.rate.note':
    'Counted from now. “Per started hour” bills 1 h 10 min as 2 h; storage counts while the machine exists, stopped included.',

  'billing.notices.title': 'What gpurent told you',
  'billing.notices.intro':
    'While gpurent is open it watches as a second guard: every 30 s it re-reads each machine’s guard, re-checks deadlines and budgets, and notifies you once per event. When a rented machine’s guard missed its deadline by 3 min and the provider still reports it running, gpurent does that guard’s stop or release itself and shows what the provider then says; a pasted host is only notified (gpurent cannot stop it). The guard on the machine works without it.',
  'billing.notices.none': 'Nothing yet.',
  'billing.notice.idle': '{host} has been idle for {minutes} min; its guard acts after {limit} min.',
  'billing.notice.deadline_soon': '{host}: its deadline is in {minutes} min.',
  'billing.notice.deadline_missed': '{host} still bills {minutes} min after its deadline.',
  'billing.notice.budget_warn': 'Budget {name}: 80 % spent ({spent} of {budget}).',
  'billing.notice.budget_over': 'Budget {name} is used up ({spent} of {budget}).',
  'billing.notice.balance_low':
    '{account}: the balance runs out in about {hours} h. The platform may then release the machine and delete its disk.',
  'billing.notice.still_billing': '{host}: a stop was sent but the provider still shows it billing.',
  'billing.notice.budget_cannot_stop':
    '{host}: a budget with "stop at 100 %" is used up ({spent} of {budget}), but its provider has no stop (only release): nothing was sent and it still bills. Release it below — the release checklist shows what would be lost first.',
  'billing.notice.deadline_acted':
    "gpurent did the guard's {action} of {host} {minutes} min after its deadline, because the guard on the machine did not. The provider now says: {state}.",
  'billing.notice.deadline_act_failed':
    "{host}: the guard on the machine missed its deadline and gpurent's {action} was not confirmed by the provider ({state}).",
  'billing.notice.guard_stale':
    '{host}: the guard on the machine is stuck (it has not checked the machine for a while): neither its idle time nor its deadline can act. Switch it off and set it again, or stop or release the machine yourself.',
  'billing.notice.key_left':
    "{host}: gpurent's {action} went through, but the machine could not be reached first to delete the full account API key its guard held ({state}). It may remain on the machine's disk: revoke that key in the provider's console and connect a new one.",

  'billing.notice.release_soon':
    '{host} is powered off and {platform} releases it (wiping its data) in about {hours} h, as it does with a machine left powered off too many days in a row. Start it, or download what you need first.',
  'billing.kind.foreign': '{provider}, not started by gpurent — still billing',
  'billing.foreign.so_far': 'since gpurent first saw it',
  'billing.foreign.release.title': 'Release {id}?',
  'billing.foreign.release.what': '{name} on account {account} was not started by gpurent and bills {price}.',
  'billing.foreign.release.deletes':
    'Releasing deletes the machine and its disk: download what you need from it first. gpurent checks with the provider that it is gone.',
  'billing.foreign.release.yes': 'Release it',
  'billing.total.foreign': '{n} machine(s) not started by gpurent included: {price}/h',
  'billing.kind.provider': '{provider}, rented',
  'billing.reported': '{theirs} by the provider',
  'billing.reported.differs': 'the provider says {theirs}, gpurent counts {ours}',
  'billing.chart.intro':
    'What all machines together had cost at each moment, rented machines released since included (what they spent is spent).',
  'billing.balances.title': 'Account balances',
  'billing.balances.none': 'No provider account connected.',
  'billing.balance.left': '{usd} left, {rate} burning now',
  'billing.balance.runs_out': 'runs out in about {hours} h',
  'billing.balance.warning':
    'Then the platform may release the machine and delete its disk: top up or download your results before.',
  'billing.balance.error': 'balance not read ({code})',
  'billing.balance.none': 'this provider reports no balance',
};
