// Typed wrappers over the Rust commands. Types come from ../bindings (generated from Rust).
import { invoke, channel } from './tauri.js';
import { askPassphrase } from './unlock.js';

/** @typedef {import('../bindings/ErrorPayload').ErrorPayload} ErrorPayload */

/**
 * Run a step that logs in with a saved key. When the key is protected by a passphrase and not
 * unlocked yet, the core answers `passphrase_required` naming the key: ask for it once, unlock
 * it for this app session (`key_unlock`; memory only) and run the step again. A wrong answer
 * asks again; closing the prompt ends with the original error.
 * @template T
 * @param {() => Promise<T>} call
 * @returns {Promise<T>}
 */
export async function withUnlock(call) {
  for (let round = 0; ; round++) {
    try {
      return await call();
    } catch (e) {
      const err = /** @type {ErrorPayload} */ (e);
      const label = err.code === 'passphrase_required' ? err.data?.key_label : undefined;
      if (!label || round > 2) throw err;
      await unlockKey(label, err);
    }
  }
}

/** @param {string} label @param {ErrorPayload} why */
async function unlockKey(label, why) {
  let wrong = false;
  for (;;) {
    const pass = await askPassphrase(label, wrong);
    if (pass === null) throw why;
    try {
      await invoke('key_unlock', { label, passphrase: pass });
      return;
    } catch (e) {
      if (/** @type {ErrorPayload} */ (e).code !== 'wrong_passphrase') throw e;
      wrong = true;
    }
  }
}

/** @typedef {import('../bindings/Card').Card} Card */
/** @typedef {import('../bindings/CardFilter').CardFilter} CardFilter */
/** @typedef {import('../bindings/CardDetail').CardDetail} CardDetail */
/** @typedef {import('../bindings/Settings').Settings} Settings */
/** @typedef {import('../bindings/SettingsView').SettingsView} SettingsView */
/** @typedef {import('../bindings/SelfCheckReport').SelfCheckReport} SelfCheckReport */
/** @typedef {import('../bindings/Progress').Progress} Progress */

/** @param {CardFilter} filter @returns {Promise<Card[]>} */
export const catalogList = (filter) => invoke('catalog_list', { filter });

/** @param {string} id @returns {Promise<CardDetail>} */
export const catalogCard = (id) => invoke('catalog_card', { id });

/** @returns {Promise<SettingsView>} */
export const settingsGet = () => invoke('settings_get');

/** @param {Settings} settings @returns {Promise<SettingsView>} */
export const settingsSet = (settings) => invoke('settings_set', { settings });

/** @param {(p: Progress) => void} onProgress @returns {Promise<SelfCheckReport>} */
export const selfcheckRun = (onProgress) => invoke('selfcheck_run', { onProgress: channel(onProgress) });

/** @param {string} opId @returns {Promise<null>} */
export const opCancel = (opId) => invoke('op_cancel', { opId });

/** Pause a running transfer (it keeps what arrived; resume later). @param {string} opId @returns {Promise<null>} */
export const opPause = (opId) => invoke('op_pause', { opId });

/** @typedef {import('../bindings/Job').Job} Job */
/** @typedef {import('../bindings/Estimate').Estimate} Estimate */
/** @typedef {import('../bindings/ModelSpec').ModelSpec} ModelSpec */
/** @typedef {import('../bindings/QuantFormat').QuantFormat} QuantFormat */
/** @typedef {import('../bindings/LocalFitReport').LocalFitReport} LocalFitReport */
/** @typedef {import('../bindings/Offer').Offer} Offer */

/** @param {Job} job @returns {Promise<Estimate>} */
export const estimateRun = (job) => invoke('estimate_run', { job });

/** @typedef {import('../bindings/KindJob').KindJob} KindJob */
/** @typedef {import('../bindings/KindEstimate').KindEstimate} KindEstimate */
/** @typedef {import('../bindings/KindCatalog').KindCatalog} KindCatalog */

/** A job beyond LLMs, sized from sourced figures. @param {KindJob} job @returns {Promise<KindEstimate>} */
export const kindEstimate = (job) => invoke('kind_estimate', { job });

/** The sourced figures of jobs beyond LLMs. @returns {Promise<KindCatalog>} */
export const kindCatalog = () => invoke('kind_catalog');

/** @returns {Promise<Job>} */
export const estimateDefaults = () => invoke('estimate_defaults');

/** @returns {Promise<ModelSpec[]>} */
export const estimateModels = () => invoke('estimate_models');

/** @returns {Promise<QuantFormat[]>} */
export const estimateQuants = () => invoke('estimate_quants');

/** @param {Job} job @returns {Promise<LocalFitReport>} */
export const localFit = (job) => invoke('local_fit', { job });

/** @returns {Promise<Offer[]>} */
export const pricesList = () => invoke('prices_list');

/** @param {Offer} offer @returns {Promise<Offer[]>} */
export const priceSet = (offer) => invoke('price_set', { offer });

/** @param {string} cardId @returns {Promise<Offer[]>} */
export const priceDelete = (cardId) => invoke('price_delete', { cardId });

/** @typedef {import('../bindings/KeyInfo').KeyInfo} KeyInfo */
/** @typedef {import('../bindings/KeyAlgorithm').KeyAlgorithm} KeyAlgorithm */

/** @returns {Promise<KeyInfo[]>} */
export const keyList = () => invoke('key_list');

/** @param {string} label @param {KeyAlgorithm} algorithm @param {string | null} passphrase @returns {Promise<KeyInfo>} */
export const keyNew = (label, algorithm, passphrase) => invoke('key_new', { label, algorithm, passphrase });

/** @param {string} label @param {string} path @param {string | null} passphrase @returns {Promise<KeyInfo>} */
export const keyImport = (label, path, passphrase) => invoke('key_import', { label, path, passphrase });

/** @param {string} label @returns {Promise<KeyInfo[]>} */
export const keyDelete = (label) => invoke('key_delete', { label });

/** Forget every key unlocked in this session (the next use asks again). @returns {Promise<number>} */
export const keyLockAll = () => invoke('key_lock', { label: null });

/** @typedef {import('../bindings/Host').Host} Host */
/** @typedef {import('../bindings/HostCheck').HostCheck} HostCheck */
/** @typedef {import('../bindings/PasteAdd').PasteAdd} PasteAdd */
/** @typedef {import('../bindings/HostAddOutcome').HostAddOutcome} HostAddOutcome */
/** @typedef {import('../bindings/ParsedHostSummary').ParsedHostSummary} ParsedHostSummary */
/** @typedef {import('../bindings/SshConfigResult').SshConfigResult} SshConfigResult */

/** @returns {Promise<Host[]>} */
export const hostList = () => invoke('host_list');

/** Saved hosts that still exist (a released rented machine is shown in Hosts only). @returns {Promise<Host[]>} */
export const liveHosts = async () => (await hostList()).filter((h) => h.released_ms === null);

/** @param {string} text @returns {Promise<ParsedHostSummary>} */
export const hostPreview = (text) => invoke('host_preview', { text });

/** @param {PasteAdd} req @param {(p: Progress) => void} onProgress @returns {Promise<HostAddOutcome>} */
export const hostAdd = (req, onProgress) =>
  withUnlock(() => invoke('host_add', { req, onProgress: channel(onProgress) }));

/** @param {string} label @param {(p: Progress) => void} onProgress @returns {Promise<HostCheck>} */
export const hostCheck = (label, onProgress) =>
  withUnlock(() => invoke('host_check', { label, onProgress: channel(onProgress) }));

/** @param {string} label @param {string} fingerprint @returns {Promise<Host>} */
export const hostRepin = (label, fingerprint) => withUnlock(() => invoke('host_repin', { label, fingerprint }));

/** @param {string} label @returns {Promise<SshConfigResult>} */
export const hostSshConfig = (label) => invoke('host_ssh_config', { label });

/** @param {string} label @returns {Promise<null>} */
export const hostDelete = (label) => invoke('host_delete', { label });

/** @typedef {import('../bindings/HostReport').HostReport} HostReport */
/** @typedef {import('../bindings/FixReport').FixReport} FixReport */
/** @typedef {import('../bindings/HostVerify').HostVerify} HostVerify */

/** @param {string} label @param {(p: Progress) => void} onProgress @returns {Promise<HostReport>} */
export const setupProbe = (label, onProgress) =>
  withUnlock(() => invoke('setup_probe', { label, onProgress: channel(onProgress) }));

/** @param {string} label @param {string | null} code @param {(p: Progress) => void} onProgress @returns {Promise<FixReport>} */
export const setupFix = (label, code, onProgress) =>
  withUnlock(() => invoke('setup_fix', { label, code, onProgress: channel(onProgress) }));

/** @param {string} label @param {(p: Progress) => void} onProgress @returns {Promise<HostVerify>} */
export const setupVerify = (label, onProgress) =>
  withUnlock(() => invoke('setup_verify', { label, onProgress: channel(onProgress) }));

/** @typedef {import('../bindings/Opened').Opened} Opened */
/** @typedef {import('../bindings/AgentKeep').AgentKeep} AgentKeep */

/** @param {string} label @returns {Promise<Opened>} */
export const hostOpenTerminal = (label) => withUnlock(() => invoke('host_open_terminal', { label }));

/** @param {string} label @returns {Promise<Opened>} */
export const hostOpenVscode = (label) => withUnlock(() => invoke('host_open_vscode', { label }));

/** @typedef {import('../bindings/RemoteListing').RemoteListing} RemoteListing */
/** @typedef {import('../bindings/ScanReport').ScanReport} ScanReport */
/** @typedef {import('../bindings/TransferOptions').TransferOptions} TransferOptions */
/** @typedef {import('../bindings/TransferReport').TransferReport} TransferReport */
/** @typedef {import('../bindings/TransferSummary').TransferSummary} TransferSummary */

export { FILES_DROPPED, forwardFileDrops } from './tauri.js';

/** @param {string} label @param {string} dir @returns {Promise<RemoteListing>} */
export const filesLs = (label, dir) => withUnlock(() => invoke('files_ls', { label, dir }));

/** @param {string} label @param {string} path @returns {Promise<null>} */
export const filesMkdir = (label, path) => withUnlock(() => invoke('files_mkdir', { label, path }));

/** @param {string} label @param {string} from @param {string} to @returns {Promise<null>} */
export const filesRename = (label, from, to) => withUnlock(() => invoke('files_rename', { label, from, to }));

/** @param {string} label @param {string} path @param {boolean} recursive @returns {Promise<null>} */
export const filesDelete = (label, path, recursive) =>
  withUnlock(() => invoke('files_delete', { label, path, recursive }));

/** @param {string[]} paths @param {string[]} excludes @returns {Promise<ScanReport>} */
export const filesScan = (paths, excludes) => invoke('files_scan', { paths, excludes });

/** @param {string} label @param {string[]} locals @param {string} remoteDir @param {TransferOptions} opts @param {(p: Progress) => void} onProgress @returns {Promise<TransferReport>} */
export const filesPut = (label, locals, remoteDir, opts, onProgress) =>
  withUnlock(() => invoke('files_put', { label, locals, remoteDir, opts, onProgress: channel(onProgress) }));

/** @param {string} label @param {string[]} remotes @param {string} localDir @param {TransferOptions} opts @param {(p: Progress) => void} onProgress @returns {Promise<TransferReport>} */
export const filesGet = (label, remotes, localDir, opts, onProgress) =>
  withUnlock(() => invoke('files_get', { label, remotes, localDir, opts, onProgress: channel(onProgress) }));

/** @param {string | null} label @returns {Promise<TransferSummary[]>} */
export const filesTransfers = (label) => invoke('files_transfers', { label });

/** @param {number} id @param {(p: Progress) => void} onProgress @returns {Promise<TransferReport>} */
export const filesResume = (id, onProgress) =>
  withUnlock(() => invoke('files_resume', { id, onProgress: channel(onProgress) }));

/** @param {number} id @returns {Promise<TransferSummary>} */
export const filesDiscard = (id) => withUnlock(() => invoke('files_discard', { id }));

/**
 * The OS file dialog (opened by Rust over the window); [] when it was closed.
 * @param {'files' | 'folder' | 'download_dir' | 'key_file'} pick @param {string} title @returns {Promise<string[]>}
 */
export const filesPick = (pick, title) => invoke('files_pick', { pick, title });

/**
 * The warned export of a private key; `acknowledgedRisk` is the user's own tick (the core refuses
 * without it). @param {string} label @param {string} path @param {boolean} acknowledgedRisk @returns {Promise<string>}
 */
export const keyExportPrivate = (label, path, acknowledgedRisk) =>
  invoke('key_export_private', { label, path, acknowledgedRisk });

/** @typedef {import('../bindings/Account').Account} Account */
/** @typedef {import('../bindings/AccountCheck').AccountCheck} AccountCheck */
/** @typedef {import('../bindings/ProviderKind').ProviderKind} ProviderKind */
/** @typedef {import('../bindings/OfferQuery').OfferQuery} OfferQuery */
/** @typedef {import('../bindings/OffersView').OffersView} OffersView */
/** @typedef {import('../bindings/ProviderOffer').ProviderOffer} ProviderOffer */
/** @typedef {import('../bindings/RentOptions').RentOptions} RentOptions */
/** @typedef {import('../bindings/RentRequest').RentRequest} RentRequest */
/** @typedef {import('../bindings/InstanceView').InstanceView} InstanceView */
/** @typedef {import('../bindings/InstancesView').InstancesView} InstancesView */
/** @typedef {import('../bindings/MoneyNote').MoneyNote} MoneyNote */

/** @returns {Promise<Account[]>} */
export const providerList = () => invoke('provider_list');

/**
 * Connect an account: the core checks the key with one authenticated read, then keeps it in the
 * OS keychain. The key crosses IPC once, as a Secret; the caller must not keep it.
 * @param {ProviderKind} provider @param {string | null} name @param {string} key
 * @returns {Promise<AccountCheck>}
 */
export const providerAdd = (provider, name, key) => invoke('provider_add', { provider, name, key });

/** @param {string} name @returns {Promise<AccountCheck>} */
export const providerTest = (name) => invoke('provider_test', { name });

/** @param {string} name @returns {Promise<null>} */
export const providerRemove = (name) => invoke('provider_remove', { name });

/** @param {OfferQuery} query @returns {Promise<OffersView>} */
export const offersList = (query) => invoke('offers_list', { provider: null, query });

/** @param {ProviderOffer} offer @param {number | null} diskGb @returns {Promise<RentOptions>} */
export const rentOptions = (offer, diskGb) => invoke('rent_options', { offer, diskGb });

/**
 * Rent (intent row → key → one create → wait → proven key login → saved host). A key with a
 * passphrase is asked for first (before anything is created).
 * @param {RentRequest} request @param {string} keyLabel @param {(p: Progress) => void} onProgress
 * @returns {Promise<InstanceView>}
 */
export const rent = (request, keyLabel, onProgress) =>
  withUnlock(() => invoke('rent', { request, keyLabel, passphrase: null, onProgress: channel(onProgress) }));

/** @returns {Promise<InstancesView>} */
export const instancesList = () => invoke('instances_list');

/** @param {string} instance @param {'stop' | 'start' | 'release'} action @returns {Promise<MoneyNote>} */
export const instanceMoney = (instance, action) => invoke('instance_money', { instance, action });

/** @param {string} instance @param {'stop' | 'start' | 'release'} action @returns {Promise<InstanceView>} */
export const instanceAction = (instance, action) => invoke('instance_action', { instance, action, yes: true });

/**
 * Release a machine gpurent did not start (by its provider id, on its account), after the user
 * confirmed; done only when the provider no longer shows it.
 * @param {string} providerInstanceId @param {string} account
 * @returns {Promise<import('../bindings/ForeignRelease').ForeignRelease>}
 */
export const foreignRelease = (providerInstanceId, account) =>
  invoke('foreign_release', { providerInstanceId, account, yes: true });

/** @typedef {import('../bindings/ReleaseChecklist').ReleaseChecklist} ReleaseChecklist */
/** @typedef {import('../bindings/EnvRecipe').EnvRecipe} EnvRecipe */

/**
 * The release checklist of a rented machine (gpurent id or provider id) or a saved host:
 * `folders` are result folders on the machine to compare with what was downloaded.
 * @param {string} instance @param {string[]} folders @returns {Promise<ReleaseChecklist>}
 */
export const releaseChecklist = (instance, folders) =>
  withUnlock(() => invoke('release_checklist', { instance, folders }));

/** Save the checklist's environment recipe locally; returns its path. @param {EnvRecipe} recipe @returns {Promise<string>} */
export const releaseSaveRecipe = (recipe) => invoke('release_save_recipe', { recipe });
