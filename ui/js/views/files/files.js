// Step 5, Files: the host's files beside a transfer queue. Drop files or folders onto the window
// (the native drop gives real paths; nothing is read in JS) to upload into the folder shown;
// or pick them with the OS dialog; select remote items to download into a folder chosen the same
// way. Transfers show bytes, files, rate and ETA, can be paused, resumed (also after a cut) and
// cancelled, and say "verified" once SHA-256 matched on both ends.
import {
  FILES_DROPPED,
  filesDelete,
  filesDiscard,
  filesGet,
  filesLs,
  filesMkdir,
  filesPick,
  filesPut,
  filesRename,
  filesResume,
  filesScan,
  filesTransfers,
  liveHosts,
} from '../../api.js';
import { hideError, showError } from '../../banner.js';
import { clear, el } from '../../dom.js';
import { language, num, t } from '../../i18n.js';
import * as ops from '../../ops.js';
import { platform } from '../../platform.js';

/** @typedef {import('../../../bindings/RemoteListing').RemoteListing} RemoteListing */
/** @typedef {import('../../../bindings/RemoteEntry').RemoteEntry} RemoteEntry */
/** @typedef {import('../../../bindings/TransferSummary').TransferSummary} TransferSummary */
/** @typedef {import('../../../bindings/ScanReport').ScanReport} ScanReport */
/** @typedef {import('../../../bindings/Progress').Progress} Progress */
/** @typedef {import('../../../bindings/ErrorPayload').ErrorPayload} ErrorPayload */

const state = {
  /** @type {string | null} */
  host: null,
  dir: '.',
  /** @type {Set<string>} */
  selected: new Set(),
  downloadDir: '',
};

/**
 * Open the OS file dialog (from Rust, over the window); the chosen paths, [] when it was closed
 * or failed (the failure shown in the banner).
 * @param {'files' | 'folder' | 'download_dir' | 'key_file'} what @param {string} title
 * @returns {Promise<string[]>}
 */
export async function pickPaths(what, title) {
  try {
    return await filesPick(what, title);
  } catch (e) {
    showError(/** @type {ErrorPayload} */ (e));
    return [];
  }
}

/**
 * Open Files on this host next time the screen is drawn (Setup's next step).
 * @param {string} label
 */
export function filesOn(label) {
  if (state.host !== label) {
    state.host = label;
    state.dir = '.';
    state.selected.clear();
  }
}

/** @param {number} b */
function bytes(b) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = b;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${num(v, i === 0 ? 0 : 1)} ${units[i]}`;
}

/** @param {number} s */
function duration(s) {
  if (!Number.isFinite(s) || s < 0) return '—';
  const m = Math.floor(s / 60);
  return m >= 60
    ? `${Math.floor(m / 60)} h ${m % 60} min`
    : m > 0
      ? `${m} min ${Math.round(s % 60)} s`
      : `${Math.round(s)} s`;
}

/** Live meter for one running operation: bytes, rate and ETA from cumulative events. @param {number} t0 when it started (performance.now()) */
function meter(t0) {
  const line = el('p', { class: 'meter muted small' });
  const files = el('p', { class: 'meter-files muted small' });
  const bar = /** @type {HTMLProgressElement} */ (el('progress', { class: 'meter-bar' }));
  /** @param {Progress} p */
  const on = (p) => {
    if (p.kind === 'units' && p.total_units !== null && p.total_units > 1) {
      files.textContent = t('files.meter.files', { done: num(p.done_units, 0), total: num(p.total_units, 0) });
    }
    if (p.kind !== 'bytes') return;
    const secs = (performance.now() - t0) / 1000;
    const rate = secs > 0 ? p.done_bytes / secs : 0;
    if (p.total_bytes) {
      bar.max = p.total_bytes;
      bar.value = p.done_bytes;
    } else bar.removeAttribute('value');
    const eta = p.total_bytes && rate > 0 ? (p.total_bytes - p.done_bytes) / rate : NaN;
    line.textContent = t('files.meter', {
      done: bytes(p.done_bytes),
      total: p.total_bytes ? bytes(p.total_bytes) : '?',
      rate: `${bytes(rate)}/s`,
      eta: duration(eta),
    });
  };
  return { line, files, bar, on };
}

/** @param {HTMLElement} root @param {AbortSignal} signal */
export async function renderFiles(root, signal) {
  const hosts = await liveHosts().catch((e) => {
    if (!signal.aborted) showError(/** @type {ErrorPayload} */ (e));
    return [];
  });
  if (signal.aborted) return;
  root.append(el('h1', { text: t('files.title') }), el('p', { class: 'lead', text: t('files.intro') }));
  if (hosts.length === 0) {
    root.append(el('p', { class: 'card', id: 'files-nohosts', text: t('setup.nohosts') }));
    return;
  }
  if (!state.host || !hosts.some((h) => h.label === state.host)) state.host = hosts[0].label;
  const hostSel = /** @type {HTMLSelectElement} */ (el('select', { id: 'files-host' }));
  for (const h of hosts)
    hostSel.append(el('option', { value: h.label, text: h.label, selected: h.label === state.host }));

  const pathInput = /** @type {HTMLInputElement} */ (
    el('input', { id: 'remote-path', type: 'text', value: state.dir, spellcheck: 'false' })
  );
  const list = el('tbody', { id: 'remote-list' });
  const queue = el('div', { id: 'transfers' });
  const live = el('div', { id: 'files-live' });
  const drop = el('div', { id: 'drop-zone', class: 'drop-zone' });
  const localPath = /** @type {HTMLInputElement} */ (
    el('input', {
      id: 'local-path',
      type: 'text',
      spellcheck: 'false',
      placeholder: t(`files.local.placeholder.${platform()}`),
    })
  );
  const downloadDir = /** @type {HTMLInputElement} */ (
    el('input', {
      id: 'download-dir',
      type: 'text',
      spellcheck: 'false',
      value: state.downloadDir,
      placeholder: t(`files.download.placeholder.${platform()}`),
    })
  );
  const scanBox = el('div', { id: 'scan-box', hidden: true });
  const note = el('p', { id: 'files-note', class: 'muted small' });
  const label = () => hostSel.value;

  async function ls(dir = state.dir) {
    try {
      const listing = await filesLs(label(), dir);
      if (signal.aborted) return;
      hideError();
      state.dir = listing.absolute;
      pathInput.value = listing.absolute;
      state.selected.clear();
      drawList(list, listing, { open: (d) => ls(d), refresh: () => ls(), label });
      drop.textContent = t('files.drop', { dir: listing.absolute });
    } catch (e) {
      if (!signal.aborted) showError(/** @type {ErrorPayload} */ (e));
    }
  }

  async function refreshQueue() {
    try {
      // While a put or get runs for this host, its items not started yet wait in the queue: they
      // are its own, not offered for resuming; a running item never is (the core marks it).
      const transfers = await filesTransfers(label());
      if (!signal.aborted)
        drawQueue(queue, transfers, { resume, discard, busy: ops.running('transfer', label()).length > 0 });
    } catch (e) {
      if (!signal.aborted) showError(/** @type {ErrorPayload} */ (e));
    }
  }

  /**
   * The row of a running transfer: live meter, Pause and Cancel. The transfer itself lives in the
   * operations registry, so a row is drawn again for it when this screen is rebuilt.
   * @param {ops.RunningOp} op
   */
  function showRunning(op) {
    const m = meter(Number(op.info.t0));
    const pause = /** @type {HTMLButtonElement} */ (
      el('button', {
        type: 'button',
        class: 'ghost',
        'data-action': 'pause',
        text: t('files.pause'),
        disabled: op.stopping,
      })
    );
    const cancel = /** @type {HTMLButtonElement} */ (
      el('button', {
        type: 'button',
        class: 'danger ghost',
        'data-action': 'cancel',
        text: t('files.cancel'),
        disabled: op.stopping,
      })
    );
    const stopWith = (/** @type {(op: ops.RunningOp) => void} */ how) => () => {
      pause.disabled = cancel.disabled = true;
      how(op);
    };
    pause.addEventListener('click', stopWith(ops.pause));
    cancel.addEventListener('click', stopWith(ops.cancel));
    const what =
      op.info.what === 'resume'
        ? t('files.resuming', { id: op.info.id })
        : t(op.info.what === 'upload' ? 'files.uploading' : 'files.downloading', { n: op.info.n, dir: op.info.dir });
    const row = el(
      'div',
      { class: 'card wide running', 'data-op': String(op.seq) },
      el('strong', { text: what }),
      m.bar,
      m.line,
      m.files,
      el('div', { class: 'row' }, pause, cancel),
    );
    live.append(row);
    ops.attach(op, signal, m.on);
    op.done.then(async () => {
      row.remove();
      if (!signal.aborted) await Promise.all([refreshQueue(), ls()]);
    });
  }

  /**
   * Run one transfer as a registered operation; its outcome is told wherever the user is.
   * @param {Record<string, string | number>} info what it is (`what`: upload, download, resume)
   * @param {(on: (p: Progress) => void) => Promise<unknown>} run
   */
  async function track(info, run) {
    const { op, result } = ops.start('transfer', label(), { ...info, t0: performance.now() }, run);
    note.textContent = '';
    showRunning(op);
    refreshQueue();
    try {
      await result;
      hideError();
    } catch (e) {
      const err = /** @type {ErrorPayload} */ (e);
      if (err.code === 'paused') {
        hideError();
        const n = document.getElementById('files-note');
        if (n) n.textContent = t('files.paused');
      } else if (err.code !== 'cancelled') showError(err);
    }
  }

  /** @param {number} id */
  async function discard(id) {
    try {
      await filesDiscard(id);
      hideError();
    } catch (e) {
      showError(/** @type {ErrorPayload} */ (e));
    }
    await refreshQueue();
  }

  /** @param {number} id */
  function resume(id) {
    return track({ what: 'resume', id }, (on) => filesResume(id, on));
  }

  /** Scan first: warn about .git, node_modules, virtualenvs; the user picks what to skip. @param {string[]} paths */
  async function upload(paths) {
    /** @type {ScanReport} */
    let scan;
    try {
      scan = await filesScan(paths, []);
    } catch (e) {
      showError(/** @type {ErrorPayload} */ (e));
      return;
    }
    const go = (/** @type {string[]} */ excludes) => {
      scanBox.hidden = true;
      const dir = state.dir;
      track({ what: 'upload', n: paths.length, dir }, (on) =>
        filesPut(
          label(),
          paths,
          dir,
          { excludes, overwrite: false, streams: null, method: null, chunk_bytes: null, retries: null },
          on,
        ),
      );
    };
    if (scan.warnings.length === 0) return go([]);
    clear(scanBox);
    /** @type {HTMLInputElement[]} */
    const boxes = [];
    const ul = el('ul', { class: 'checks' });
    for (const w of scan.warnings) {
      const cb = /** @type {HTMLInputElement} */ (
        el('input', { type: 'checkbox', checked: w.kind !== 'large_file', 'data-exclude': w.exclude })
      );
      boxes.push(cb);
      ul.append(
        el(
          'li',
          {},
          el(
            'label',
            { class: 'check' },
            cb,
            el('span', { text: t(`scan.${w.kind}`, { path: w.path, files: num(w.files, 0), size: bytes(w.bytes) }) }),
          ),
        ),
      );
    }
    const ok = el('button', { type: 'button', id: 'scan-upload', class: 'primary', text: t('files.scan.upload') });
    ok.addEventListener('click', () =>
      go(
        boxes
          .filter((b) => b.checked)
          .map((b) => b.dataset.exclude ?? '')
          .filter(Boolean),
      ),
    );
    const cancel = el('button', { type: 'button', text: t('files.cancel') });
    cancel.addEventListener('click', () => {
      scanBox.hidden = true;
    });
    scanBox.append(
      el('h3', { text: t('files.scan.title', { files: num(scan.files, 0), size: bytes(scan.bytes) }) }),
      ul,
      el('div', { class: 'row' }, ok, cancel),
    );
    scanBox.hidden = false;
  }

  // Files dropped on the window while this screen is on the page.
  document.addEventListener(
    FILES_DROPPED,
    (ev) => upload(/** @type {CustomEvent<{ paths: string[] }>} */ (ev).detail.paths),
    { signal },
  );

  const uploadBtn = el('button', { type: 'button', id: 'upload', class: 'primary', text: t('files.upload') });
  uploadBtn.addEventListener('click', () => {
    if (localPath.value.trim()) upload([localPath.value.trim()]);
  });
  const pickFiles = el('button', { type: 'button', id: 'pick-files', text: t('files.pick.files') });
  pickFiles.addEventListener('click', async () => {
    const paths = await pickPaths('files', t('files.pick.files.title'));
    if (paths.length) upload(paths);
  });
  const pickFolder = el('button', { type: 'button', id: 'pick-folder', text: t('files.pick.folder') });
  pickFolder.addEventListener('click', async () => {
    const paths = await pickPaths('folder', t('files.pick.folder.title'));
    if (paths.length) upload(paths);
  });
  const pickDownload = el('button', { type: 'button', id: 'pick-download', text: t('files.pick.download') });
  pickDownload.addEventListener('click', async () => {
    const [dir] = await pickPaths('download_dir', t('files.pick.download.title'));
    if (dir) downloadDir.value = state.downloadDir = dir;
  });
  const downloadBtn = el('button', { type: 'button', id: 'download', text: t('files.download') });
  downloadBtn.addEventListener('click', () => {
    const picked = [...list.querySelectorAll('input.pick:checked')].map(
      (c) => /** @type {HTMLInputElement} */ (c).value,
    );
    const to = downloadDir.value.trim();
    state.downloadDir = to;
    if (!picked.length || !to)
      return showError({ code: 'invalid_input', message: '', detail: t('files.download.need') });
    track({ what: 'download', n: picked.length, dir: to }, (on) =>
      filesGet(
        label(),
        picked,
        to,
        { excludes: [], overwrite: false, streams: null, method: null, chunk_bytes: null, retries: null },
        on,
      ),
    );
  });
  const go = el('button', { type: 'button', id: 'remote-go', text: t('files.go') });
  // A typed folder is trimmed here, where it is typed; names from the listing never are.
  go.addEventListener('click', () => ls(pathInput.value.trim()));
  pathInput.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') ls(pathInput.value.trim());
  });
  const up = el('button', { type: 'button', id: 'remote-up', text: t('files.up') });
  up.addEventListener('click', () => ls(`${state.dir.replace(/\/+$/, '')}/..`));
  const mk = el('button', { type: 'button', id: 'remote-mkdir', text: t('files.mkdir') });
  mk.addEventListener('click', async () => {
    const name = prompted.value.trim();
    if (!name) return;
    try {
      await filesMkdir(label(), `${state.dir.replace(/\/+$/, '')}/${name}`);
      prompted.value = '';
      await ls();
    } catch (e) {
      showError(/** @type {ErrorPayload} */ (e));
    }
  });
  const prompted = /** @type {HTMLInputElement} */ (
    el('input', { id: 'remote-new-name', type: 'text', placeholder: t('files.mkdir.placeholder') })
  );
  hostSel.addEventListener('change', () => {
    state.host = hostSel.value;
    state.dir = '.';
    ls('.');
    refreshQueue();
  });
  // Transfers started before this screen was drawn (another step or language meanwhile).
  for (const op of ops.running('transfer')) showRunning(op);

  root.append(
    el(
      'div',
      { class: 'files-grid' },
      el(
        'section',
        { class: 'card wide' },
        el(
          'div',
          { class: 'form-row' },
          el('label', { class: 'field' }, el('span', { text: t('setup.host') }), hostSel),
          el('label', { class: 'field grow' }, el('span', { text: t('files.folder') }), pathInput),
          go,
          up,
        ),
        el(
          'div',
          { class: 'table-wrap' },
          el(
            'table',
            { class: 'data', id: 'remote-table' },
            el(
              'thead',
              {},
              el(
                'tr',
                {},
                el('th', {}),
                el('th', { text: t('files.col.name') }),
                el('th', { class: 'num', text: t('files.col.size') }),
                el('th', { text: t('files.col.modified') }),
                el('th', {}),
              ),
            ),
            list,
          ),
        ),
        el('div', { class: 'form-row' }, prompted, mk),
        el(
          'div',
          { class: 'form-row' },
          el('label', { class: 'field grow' }, el('span', { text: t('files.download.to') }), downloadDir),
          pickDownload,
          downloadBtn,
        ),
      ),
      el(
        'section',
        { class: 'card wide' },
        drop,
        el('div', { class: 'row' }, pickFiles, pickFolder),
        el(
          'div',
          { class: 'form-row' },
          el('label', { class: 'field grow' }, el('span', { text: t('files.local') }), localPath),
          uploadBtn,
        ),
        scanBox,
        live,
        note,
        el('h2', { text: t('files.queue') }),
        queue,
      ),
    ),
  );
  await Promise.all([ls(), refreshQueue()]);
}

/**
 * @param {HTMLElement} body
 * @param {RemoteListing} listing
 * @param {{ open: (dir: string) => void, refresh: () => void, label: () => string }} ctx
 */
function drawList(body, listing, ctx) {
  clear(body);
  // A transfer's temporary file or folder (`.NAME.gpurent-ID.part`) belongs to the queue, where
  // it can be resumed or discarded; it is not shown as a file of its own.
  const temp = /^\..*\.gpurent-\d+\.part$/;
  const dirsFirst = listing.entries
    .filter((e) => !temp.test(e.name))
    .sort((a, b) => Number(b.kind === 'dir') - Number(a.kind === 'dir') || a.name.localeCompare(b.name));
  for (const e of dirsFirst) {
    const name =
      e.kind === 'dir'
        ? el('button', { type: 'button', class: 'linkish dir', text: `${e.name}/` })
        : el('span', { text: e.name });
    if (e.kind === 'dir') name.addEventListener('click', () => ctx.open(e.path));
    const actions = el('td', { class: 'actions' });
    const ren = el('button', { type: 'button', class: 'ghost small', text: t('files.rename') });
    const del = el('button', { type: 'button', class: 'danger ghost small', text: t('files.delete') });
    ren.addEventListener('click', () => {
      const input = /** @type {HTMLInputElement} */ (el('input', { type: 'text', value: e.name }));
      const ok = el('button', { type: 'button', text: t('files.rename') });
      ok.addEventListener('click', async () => {
        try {
          await filesRename(ctx.label(), e.path, `${listing.absolute.replace(/\/+$/, '')}/${input.value.trim()}`);
          ctx.refresh();
        } catch (err) {
          showError(/** @type {ErrorPayload} */ (err));
        }
      });
      clear(actions);
      actions.append(input, ok);
    });
    del.addEventListener('click', () => {
      const yes = el('button', {
        type: 'button',
        class: 'danger small',
        'data-confirm': e.name,
        text: t('files.delete.yes', { name: e.name }),
      });
      yes.addEventListener('click', async () => {
        try {
          await filesDelete(ctx.label(), e.path, e.kind === 'dir');
          ctx.refresh();
        } catch (err) {
          showError(/** @type {ErrorPayload} */ (err));
        }
      });
      clear(actions);
      actions.append(yes);
    });
    actions.append(ren, del);
    body.append(
      el(
        'tr',
        { 'data-name': e.name, 'data-kind': e.kind },
        el('td', {}, el('input', { type: 'checkbox', class: 'pick', value: e.path, 'aria-label': e.name })),
        el('td', {}, name),
        el('td', { class: 'num', text: e.kind === 'dir' ? '' : bytes(e.size_bytes) }),
        el('td', {
          class: 'muted small',
          text: e.modified_s
            ? new Date(e.modified_s * 1000).toLocaleString(language(), { dateStyle: 'short', timeStyle: 'short' })
            : '',
        }),
        actions,
      ),
    );
  }
  if (!dirsFirst.length) body.append(el('tr', {}, el('td', { colspan: '5', class: 'muted', text: t('files.empty') })));
}

/**
 * @param {HTMLElement} box
 * @param {TransferSummary[]} items
 * @param {{ resume: (id: number) => void, discard: (id: number) => void, busy: boolean }} ctx
 *   `busy`: an operation of this screen runs, so interrupted or waiting rows may be its own.
 */
function drawQueue(box, items, ctx) {
  clear(box);
  if (!items.length) {
    box.append(el('p', { class: 'muted', text: t('files.queue.empty') }));
    return;
  }
  for (const x of items.slice(0, 30)) {
    const name = x.direction === 'upload' ? x.local_path : x.remote_path;
    const progress = x.total_bytes ? `${bytes(x.done_bytes)} / ${bytes(x.total_bytes)}` : bytes(x.done_bytes);
    const row = el(
      'div',
      {
        class: `transfer state-${x.state}`,
        'data-id': String(x.id),
        'data-state': x.state,
        'data-running': String(x.running),
        'data-verified': String(x.verified),
      },
      el('span', { class: 'dir', text: x.direction === 'upload' ? '↑' : '↓' }),
      el('span', { class: 'name', text: name.split('/').pop() ?? name }),
      el('span', { class: 'muted small', text: progress }),
      el('span', {
        class: `badge ${x.verified ? 'ok' : ''}`,
        text: x.verified ? t('files.verified') : x.running ? t('files.state.running') : t(`files.state.${x.state}`),
      }),
    );
    if (x.error_code) row.append(el('span', { class: 'bad-text small', text: t(`error.${x.error_code}`) }));
    const stopped =
      !x.running &&
      (x.state === 'paused' || x.state === 'failed' || (!ctx.busy && (x.state === 'partial' || x.state === 'pending')));
    if (stopped) {
      const b = el('button', { type: 'button', class: 'small', 'data-resume': String(x.id), text: t('files.resume') });
      b.addEventListener('click', () => ctx.resume(x.id));
      const d = el('button', {
        type: 'button',
        class: 'danger ghost small',
        'data-discard': String(x.id),
        text: t('files.discard'),
      });
      d.addEventListener('click', () => {
        const yes = el('button', {
          type: 'button',
          class: 'danger small',
          'data-discard-yes': String(x.id),
          text: t('files.discard.yes'),
        });
        yes.addEventListener('click', () => ctx.discard(x.id));
        d.replaceWith(yes);
      });
      row.append(b, d);
    }
    box.append(row);
  }
}
