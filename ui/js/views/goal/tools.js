// What to do with a running recipe's app from this computer, on the goal screen once it answered:
// Whisper's "Transcribe audio files" (each file sent through a gpurent tunnel, its transcript
// written next to it), the recipe's input uploaded to its folder on the host (a LoRA's dataset,
// through Files' transfer), its result folders downloaded before release, and an environment
// recipe a release saved (`gpurent replay`) replayed on this machine. Each runs in ops.js
// (kind `goal_tool`, scope the host), so it survives navigation; its outcome is kept here per
// host. Paths and errors come from the machine or the OS: textContent only (dom.js).
import { filesGet, filesPut } from '../../api.js';
import { envRecipes, envReplay, recipeTranscribe } from '../../api-recipe.js';
import { el } from '../../dom.js';
import { errorText, language, t } from '../../i18n.js';
import * as ops from '../../ops.js';
import { pickPaths } from '../files/files.js';

/** @typedef {import('../../../bindings/Recipe').Recipe} Recipe */
/** @typedef {import('../../../bindings/RecipeRunReport').RecipeRunReport} RecipeRunReport */
/** @typedef {import('../../../bindings/Progress').Progress} Progress */
/** @typedef {import('../../../bindings/ErrorPayload').ErrorPayload} ErrorPayload */
/** @typedef {import('../../../bindings/TranscriptFormat').TranscriptFormat} TranscriptFormat */

/**
 * A tool's last outcome on a host.
 * @typedef {object} Outcome
 * @property {'transcribe' | 'upload' | 'download' | 'replay'} what
 * @property {{ text: string, bad: boolean }[]} lines
 */

/** @type {Map<string, Outcome>} */
const outcomes = new Map();

const TRANSFER = { excludes: [], overwrite: false, streams: null, method: null, chunk_bytes: null, retries: null };

/** Whether the recipe's app transcribes local files (Whisper). @param {Recipe} r */
export const transcribes = (r) => r.name === 'whisper';

/**
 * The tools for recipe `r` running as `report`; `redraw` draws the run's part again.
 * @param {Recipe} r @param {RecipeRunReport} report @param {AbortSignal} signal @param {() => void} redraw
 * @returns {HTMLElement | null}
 */
export function renderTools(r, report, signal, redraw) {
  const host = report.host;
  const box = el('div', { class: 'goal-tools', id: 'goal-tools' });
  const [busy] = ops.running('goal_tool', host);
  if (busy) {
    const line = el('p', { class: 'small', id: 'goal-tool-progress', text: t(`goal.tool.${busy.info.what}.busy`) });
    const cancel = /** @type {HTMLButtonElement} */ (
      el('button', { type: 'button', class: 'danger ghost', id: 'goal-tool-cancel', text: t('goal.cancel') })
    );
    cancel.disabled = busy.stopping;
    cancel.addEventListener('click', () => {
      cancel.disabled = true;
      ops.cancel(busy);
    });
    const shown = { file: '', pct: '' };
    ops.attach(busy, signal, (p) => {
      const what = String(busy.info.what);
      if (p.kind === 'units' && p.total_units && what === 'transcribe')
        shown.file = t('goal.tool.transcribe.file', {
          n: Math.min(p.done_units + 1, p.total_units),
          total: p.total_units,
        });
      else if (p.kind === 'bytes' && p.total_bytes) shown.pct = `${Math.floor((100 * p.done_bytes) / p.total_bytes)} %`;
      else return;
      line.textContent = [shown.file || t(`goal.tool.${what}.busy`), shown.pct].filter(Boolean).join(' · ');
    });
    box.append(line, el('div', { class: 'row' }, cancel));
    return box;
  }
  const row = el('div', { class: 'row' });
  if (transcribes(r)) {
    const format = /** @type {HTMLSelectElement} */ (el('select', { id: 'goal-asr-format' }));
    for (const f of ['txt', 'srt', 'vtt', 'json']) format.append(el('option', { value: f, text: f }));
    const lang = /** @type {HTMLSelectElement} */ (el('select', { id: 'goal-asr-language' }));
    for (const l of ['', 'zh', 'en', 'ja', 'ko'])
      lang.append(el('option', { value: l, text: t(`goal.asr.lang.${l || 'auto'}`) }));
    lang.value = language() === 'zh-CN' ? 'zh' : '';
    const go = el('button', {
      type: 'button',
      class: 'primary',
      id: 'goal-transcribe',
      text: t('goal.tool.transcribe'),
    });
    go.addEventListener('click', async () => {
      const files = await pickPaths('files', t('goal.tool.transcribe.pick'));
      if (!files.length) return;
      const opts = {
        format: /** @type {TranscriptFormat} */ (format.value),
        language: lang.value || null,
        out_dir: null,
      };
      launch(host, 'transcribe', redraw, (on) =>
        recipeTranscribe(host, files, opts, on).then((rep) =>
          rep.files.map((f) =>
            f.transcript
              ? { text: t('goal.tool.transcribe.ok', { file: f.file, out: f.transcript }), bad: false }
              : {
                  text: t('goal.tool.transcribe.fail', {
                    file: f.file,
                    why: errorText({ code: f.error_code ?? 'internal', message: f.error ?? '' }),
                  }),
                  bad: true,
                },
          ),
        ),
      );
    });
    row.append(
      go,
      el('label', { class: 'small' }, el('span', { text: `${t('goal.asr.format')} ` }), format),
      el('label', { class: 'small' }, el('span', { text: `${t('goal.asr.language')} ` }), lang),
    );
  }
  const inputs = r.inputs;
  if (inputs) {
    const what = language() === 'zh-CN' ? inputs.what.zh_cn : inputs.what.en;
    const up = el('button', {
      type: 'button',
      id: 'goal-upload',
      text: t('goal.tool.upload', { folder: inputs.folder }),
    });
    up.addEventListener('click', async () => {
      const dirs = await pickPaths('folder', t('goal.tool.upload.pick', { what }));
      if (!dirs.length) return;
      launch(host, 'upload', redraw, (on) =>
        filesPut(host, dirs, inputs.folder, TRANSFER, on).then((rep) =>
          rep.transfers.map((x) => ({
            text: t('goal.tool.upload.ok', { from: x.local_path, to: x.remote_path, files: x.files_done }),
            bad: !x.verified,
          })),
        ),
      );
    });
    row.append(up);
    box.append(el('p', { class: 'small muted', text: t('goal.tool.upload.what', { what, folder: inputs.folder }) }));
  }
  if (report.results.length) {
    const down = el('button', { type: 'button', id: 'goal-download', text: t('goal.tool.download') });
    down.addEventListener('click', async () => {
      const [dir] = await pickPaths('download_dir', t('goal.tool.download.pick'));
      if (!dir) return;
      launch(host, 'download', redraw, (on) =>
        filesGet(host, report.results, dir, TRANSFER, on).then((rep) =>
          rep.transfers.map((x) => ({
            text: t('goal.tool.download.ok', { from: x.remote_path, to: x.local_path, files: x.files_done }),
            bad: !x.verified,
          })),
        ),
      );
    });
    row.append(down);
  }
  box.append(row);
  // An environment saved by an earlier release, replayed here (shown once the list came back).
  const envRow = el('div', { class: 'row', id: 'goal-env', hidden: true });
  const envPick = /** @type {HTMLSelectElement} */ (el('select', { id: 'goal-env-pick' }));
  const replay = el('button', { type: 'button', id: 'goal-replay', text: t('goal.tool.replay') });
  replay.addEventListener('click', () => {
    const name = envPick.value;
    if (!name) return;
    launch(host, 'replay', redraw, (on) =>
      envReplay(host, name, on).then((rep) => [
        rep.ok
          ? { text: t('goal.tool.replay.ok', { name, python: rep.python }), bad: false }
          : { text: t('goal.tool.replay.fail', { name, status: String(rep.exit_status ?? '?') }), bad: true },
        ...rep.tail.slice(-5).map((l) => ({ text: l, bad: !rep.ok })),
      ]),
    );
  });
  envRow.append(el('span', { class: 'small', text: t('goal.tool.replay.what') }), envPick, replay);
  box.append(envRow);
  envRecipes()
    .then((saved) => {
      if (signal.aborted || !saved.length) return;
      for (const e of saved)
        envPick.append(
          el('option', {
            value: e.name,
            text: t('goal.tool.replay.item', { host: e.host, n: e.packages, name: e.name }),
          }),
        );
      envRow.hidden = false;
    })
    .catch(() => {});
  const last = outcomes.get(host);
  if (last) {
    const list = el('ul', { class: 'small', id: 'goal-tool-result', 'data-what': last.what });
    for (const l of last.lines) list.append(el('li', { class: l.bad ? 'bad-text' : '', text: l.text }));
    box.append(list);
  }
  return box;
}

/**
 * Run a tool on `host` as an operation; its lines (or its error) are the host's outcome.
 * @param {string} host @param {'transcribe' | 'upload' | 'download' | 'replay'} what @param {() => void} redraw
 * @param {(on: (p: Progress) => void) => Promise<{ text: string, bad: boolean }[]>} work
 */
function launch(host, what, redraw, work) {
  outcomes.delete(host);
  const { result } = ops.start('goal_tool', host, { what }, work);
  result
    .then(
      (lines) => outcomes.set(host, { what, lines }),
      (/** @type {ErrorPayload} */ e) => {
        if (e.code === 'cancelled')
          outcomes.set(host, { what, lines: [{ text: t('goal.tool.cancelled'), bad: true }] });
        else outcomes.set(host, { what, lines: [{ text: `${e.code}: ${errorText(e)}`, bad: true }] });
      },
    )
    .finally(redraw);
  redraw();
}
