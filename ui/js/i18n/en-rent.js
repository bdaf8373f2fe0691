// English texts of renting: Settings → Accounts, live offers in Pick a card, the rent flow, and
// the Rented machines section of the Hosts step.
/** @type {Record<string, string>} */
export default {
  'rent.provider.runpod': 'RunPod',
  'rent.provider.vast': 'Vast.ai',
  'rent.provider.lambda': 'Lambda',

  'accounts.title': 'Provider accounts',
  'accounts.intro':
    'Connect RunPod, Vast.ai, Lambda or AutoDL to see live prices and rent from gpurent. The API key is checked with one read and then kept only in the system keychain — never in gpurent’s files. GPURENT_RUNPOD_API_KEY, GPURENT_VAST_API_KEY, GPURENT_LAMBDA_API_KEY and GPURENT_AUTODL_API_KEY in the environment are used instead and written nowhere.',
  'accounts.none': 'No account connected.',
  'accounts.add.title': 'Connect an account',
  'accounts.provider': 'Provider',
  'accounts.name': 'Name (optional)',
  'accounts.name.placeholder': 'the provider’s name',
  'accounts.key': 'API key',
  'accounts.key.hint':
    'Create an API key in the provider’s console and paste it here. It is sent once to check it, then stored in the system keychain.',
  'accounts.key.empty': 'Paste the API key first.',
  'accounts.add': 'Check and connect',
  'accounts.checking': 'Checking the key with {provider}…',
  'accounts.added': 'Connected {name} ({who}).',
  'accounts.source.keychain': 'keychain',
  'accounts.source.environment': 'from the environment',
  'accounts.checked': 'last checked {when}',
  'accounts.never': 'never',
  'accounts.test': 'Test',
  'accounts.testing': 'Asking the provider…',
  'accounts.test.ok': 'The key works ({who}).',
  'accounts.remove': 'Remove',
  'accounts.remove.ask':
    'Remove {name}? Its key is deleted from the keychain; machines already rented keep running and billing.',
  'accounts.remove.yes': 'Remove it',
  'accounts.remove.no': 'Keep it',
  'accounts.removed': 'Removed {name}.',
  'accounts.env.remove': 'Unset {var} to remove it.',

  'live.title': 'Live offers for this job',
  'live.fetching': 'Asking the connected accounts for offers…',
  'live.fetched': 'Live prices, fetched {time}. Offers that can hold this job: {n}.',
  'live.none': 'The connected accounts have no offer for this job now.',
  'live.hidden': 'Left out because this job does not fit on their GPUs: {n}.',
  'live.failed': '{account} could not be asked: {why}',
  'live.price_line':
    'Live prices from your provider accounts, fetched {time} (the live offers are above). You can still enter your own price per GPU-hour.',
  'live.from': 'live from ${price}/h',
  'live.col.provider': 'Provider',
  'live.col.gpu': 'GPU',
  'live.col.price': 'Price',
  'live.col.cost': 'This job',
  'live.col.region': 'Region',
  'live.col.host': 'Host CUDA / PyTorch',
  'live.col.rent': '',
  'live.tier.secure': 'secure cloud',
  'live.tier.community': 'community',
  'live.tier.verified': 'verified',
  'live.tier.unverified': 'unverified',
  'live.tier.datacenter': 'data center',
  'live.interruptible': 'interruptible',
  'live.host_cuda': 'host CUDA {cuda}',
  'live.traffic.listed': 'traffic {down}/GB in · {up}/GB out',
  'live.traffic.not_listed': 'traffic price not listed',
  'live.host_cuda.vm': 'VM: the driver comes with the image',
  'live.torch.ok': 'runs PyTorch {torch}',
  'live.torch.no':
    'no PyTorch build runs here: the host’s CUDA is too old for the {gpu}, and a container host cannot upgrade its driver',
  'live.torch.unknown': 'PyTorch fit not known',
  'live.card.unknown': 'not in the catalog: fit unknown',
  'live.cost.note':
    '“This job” = the estimated hours on this card × the price per hour now, GPU time only (disk and traffic not included).',
  'live.cost.cell': '${cost} at the live price',
  'live.rent': 'Rent…',

  'rent.title': 'Rent {offer}',
  'rent.close': 'Close',
  'rent.image': 'Image',
  'rent.image.torch': 'PyTorch {torch}, CUDA {cuda}',
  'rent.image.default': 'the provider’s default PyTorch image',
  'rent.image.host_too_old': 'This image needs host CUDA {need}; this host has {host}.',
  'rent.image.verified': 'Checked: {verified}.',
  'rent.disk': 'Disk (GB)',
  'rent.disk.invalid': 'Enter a disk size of at least 10 GB.',
  'rent.key': 'Key to log in with',
  'rent.key.none': 'Create or import a key in the Keys step first.',
  'rent.key.passphrase': 'has a passphrase',
  'rent.key.how':
    'gpurent registers this key’s public half with {provider} and proves a login with it before the machine counts as ready.',
  'rent.next': 'Next: the money',
  'rent.back': 'Back',
  'rent.confirm.intro': 'Image {image}, {disk} GB disk, key {key}. Before anything is created:',
  'rent.money.price': '{price} per hour now for the whole machine ({gpus}× {gpu}) — about {day} a day.',
  'rent.money.stopped':
    'Stopped, the machine costs no GPU time, but its {disk} GB disk still costs about {month} a month.',
  'rent.money.stopped.unlisted':
    'Stopped, its {disk} GB disk may still cost money every month; {provider} lists no storage price with this offer, so check its pricing before leaving it stopped.',
  'rent.traffic.listed':
    'Traffic is billed on top of the hourly price: {down} per GB into the machine, {up} per GB out of it.',
  'rent.traffic.not_listed':
    '{provider} lists no traffic price in its API (that is not the same as free): check its pricing before moving a lot of data.',
  'rent.money.cannot_stop': '{provider} cannot stop a machine, only terminate it: it bills until you release it.',
  'rent.money.billing.per_second': '{provider} bills by the second, from the moment the machine is created.',
  'rent.money.billing.per_minute': '{provider} bills by the minute, from the moment the machine is created.',
  'rent.money.timeout':
    'If it is not ready (a proven key login) within {minutes} minutes, gpurent stops waiting and offers to release it.',
  'rent.create': 'Rent for {price}/h',
  'rent.running': 'Renting {offer}…',
  'rent.cancel': 'Stop waiting',
  'rent.step.offer': 'Offer still there',
  'rent.step.key': 'Key registered',
  'rent.step.create': 'Created (provisioning)',
  'rent.step.wait_running': 'Starting → running',
  'rent.step.wait_ssh': 'SSH reachable',
  'rent.step.login': 'Key login proven',
  'rent.ready': '{id} is ready and saved as the host {host}.',
  'rent.fingerprint': 'Pinned host key:',
  'rent.open_setup': 'Open Setup on it',
  'rent.failed': 'Renting the {offer} did not finish:',
  'rent.stuck':
    '{id} was created and is not ready: it still bills ({price}/h). Release it, or find it in the list below.',

  'rent.state.intent': 'about to be created',
  'rent.state.provisioning': 'provisioning',
  'rent.state.running': 'running',
  'rent.state.stopped': 'stopped',
  'rent.state.terminated': 'released',
  'rent.state.create_failed': 'not created',
  'rent.state.unknown': 'unknown (check the provider)',

  'rented.title': 'Rented machines',
  'rented.refresh': 'Refresh',
  'rented.loading': 'Reading the providers…',
  'rented.none': 'No machine rented through gpurent is open.',
  'rented.col.machine': 'Machine',
  'rented.col.gpu': 'GPU',
  'rented.col.state': 'State',
  'rented.col.price': 'Price',
  'rented.col.actions': '',
  'rented.ready': 'ready',
  'rented.stop': 'Stop',
  'rented.start': 'Start',
  'rented.release': 'Release',
  'rented.cannot_stop': 'cannot stop (only release)',
  'rented.foreign': 'not started by gpurent',
  'rented.foreign.billing': 'not started by gpurent — still billing',
  'rented.failed_account': '{account} could not be read: {why} Its machines are shown as last known.',
  'rented.closed': 'Closed ({n})',
  'rented.money.stop': 'GPU billing stops; the {disk} GB disk is kept and still costs about {month} a month.',
  'rented.money.stop.wiped':
    'GPU billing stops; the {disk} GB container disk is wiped on stop: download your results first.',
  'rented.money.stop.unlisted':
    'GPU billing stops; the {disk} GB disk is kept and may still cost money every month ({provider} lists no storage price here).',
  'rented.money.start': 'GPU billing resumes at {price} per hour.',
  'rented.money.release':
    'Release deletes the machine and its {disk} GB disk: download your results first. Billing ends.',
  'rented.confirm.stop': 'Stop it',
  'rented.confirm.start': 'Start it',
  'rented.confirm.release': 'Release it',
  'rented.confirm.cancel': 'Cancel',
  'rented.doing.stop': 'Stopping {id}…',
  'rented.doing.start': 'Starting {id}…',
  'rented.doing.release': 'Releasing {id}…',
  'rented.done': '{id}: {state} (the provider says: {raw}).',
  'rented.release.kept': '{id} was not released: the machine is still there and still billing.',
  'rented.gone': 'gone',

  'rent.error.auth_rejected': 'The provider rejected the API key. Check it in the provider’s console.',
  'rent.error.offer_gone':
    'That offer is gone (someone else took it, or it changed). Estimate again to fetch fresh offers.',
  'rent.error.insufficient_capacity':
    'The provider has no free machine of this kind right now. Try another offer or region.',
  'rent.error.quota_exceeded': 'Your account’s quota at the provider does not allow another machine.',
  'rent.error.rate_limited': 'The provider asks gpurent to slow down. Try again in a moment ({detail}).',
  'rent.error.insufficient_balance': 'Your balance at the provider is too low. Add credit in its console.',
  'rent.error.provider_outage': 'The provider has a problem on its side (5xx). Try again later.',
  'rent.error.provider_unreachable': 'The provider could not be reached (network or timeout).',
  'rent.error.request_rejected': 'The provider refused the request: {detail}',
  'rent.error.listing_unparseable': 'The provider’s answer could not be read; nothing was concluded from it.',
  'rent.error.instance_not_found': 'The provider no longer has this machine.',
  'rent.error.action_unsupported': 'This provider cannot do that (Lambda cannot stop, only release).',
  'rent.error.create_outcome_unknown':
    'The create was sent but its answer was lost. gpurent does not send it again; the machine, if made, appears in Rented machines by its label.',
  'rent.error.account_has_machines':
    'This account still has machines that may bill ({detail}). Release them first, then remove the account.',
  'rent.error.earlier_create_found':
    'Your earlier rent did make a machine, and it bills. Nothing new was created: use it, or release it in Rented machines.',
  'rent.error.provider_not_connected': 'No account for this provider is connected (Settings → Accounts).',
  'rent.error.unknown_account': 'No such account.',
  'rent.error.account_exists':
    'An account with this name is already connected. Choose another name or remove it first.',
  'rent.error.unknown_instance': 'gpurent’s ledger has no such machine.',
  'rent.error.wrong_state': 'The machine is not in a state that allows this.',
  'rent.error.machine_failed':
    'The machine failed while starting ({detail}) and does not come up by waiting; it still bills.',
  'rent.still_billing':
    'The machine {id} was made and still bills: release it here under Rented machines, or run gpurent release {id} --yes.',
  'rent.error.price_rose':
    'The provider now asks more than the price you confirmed ({detail}); nothing was created. Look at the offers again.',
  'rent.error.not_ready': 'The machine did not become ready in time; it still bills.',
  'rent.error.not_confirmed': 'The provider does not show the change yet ({detail}). Refresh in a moment.',
  'rent.error.confirmation_required': 'This needs your confirmation first.',

  // AutoDL Pro container instances (issue 23): its account, its prices (CNY, none before the create), its rules.
  'rent.provider.autodl': 'AutoDL',
  'accounts.note.autodl':
    'AutoDL: paste the developer token from the AutoDL console → Settings → Developer Token. Its API answers only accounts with real-name or enterprise verification, and only rents Pro container instances (pay-as-you-go, amounts in ¥).',
  'rent.error.account_not_verified':
    'This account is not real-name verified at the provider, so its API refuses it. Complete the real-name verification in the provider’s console, then try again.',
  'rent.money.documented':
    '{provider} gives no price before the machine is created: this is its documented pay-as-you-go rate ({source}). The machine’s own rate is read after the create and shown beside it.',
  'rent.money.source': '{page}; {verified}, read {date}',
  'rent.money.source.docs': 'stated on that page',
  'rent.money.source.unverified': 'unverified',
  'rent.log.status': '{provider}: {status}',
  'rent.log.running': '{id} is running at the provider',
  'rented.own_rate': 'its own rate {price}/h',
  'rent.money.release_days':
    '{provider} releases a machine left powered off {days} days in a row, and its data is wiped then (not verified in its docs).',
  'rent.money.billing.unknown':
    '{provider} bills while the machine runs; how it rounds the time was not found in its docs.',
  'rent.key.how.autodl':
    'AutoDL gives the new machine a root password instead of taking a key: gpurent uses it once to put this key on the machine, proves a key login, and never stores the password.',
  'live.price.documented': 'documented rate — no price before the create',
  'rented.start.note.autodl':
    'AutoDL’s API starts a machine only with its GPU: the no-GPU mode is not offered through it.',
};
