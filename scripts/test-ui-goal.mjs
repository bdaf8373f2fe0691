// The goal screen's tools (ui/js/views/goal/tools.js) in a fake DOM (scripts/fake-dom.mjs, node,
// no dependencies): Whisper's "Transcribe audio files" asks the OS dialog (from Rust) for the
// files, runs `recipe_transcribe` with the chosen format and language, and lists one line per
// file — a refused one with its translated error, every path as text (never markup); a recipe
// with `inputs` uploads a folder into it; its result folders download into a chosen folder.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { find, findAll, installFakeDom } from './fake-dom.mjs';

/** @type {{ cmd: string, args: Record<string, any> }[]} */
const calls = [];
/** What each command answers. @type {Record<string, (args: any) => unknown>} */
const answers = {};
const { doc } = installFakeDom({
  invoke: async (cmd, args) => {
    calls.push({ cmd, args });
    const a = answers[cmd];
    if (!a) throw { code: 'internal', message: `unexpected ${cmd}` };
    return a(args);
  },
});
const banner = doc.createElement('div');
banner.id = 'banner';
doc.body.append(banner);

answers.env_recipes = () => [];
const { renderTools } = await import('../ui/js/views/goal/tools.js');
const settle = () => new Promise((r) => setTimeout(r, 0));

const words = (en) => ({ en, zh_cn: en });
/** @param {Partial<Record<string, unknown>>} over */
const recipe = (over) =>
  /** @type {any} */ ({ name: 'whisper', goal: words('Transcribe'), inputs: null, results: [], unverified: [], ...over });
/** @param {string[]} results */
const report = (results) => /** @type {any} */ ({ host: 'gpu', results, url: 'http://127.0.0.1:1/', next: [] });

/** Draw the tools again on each redraw, as goal.js does. @param {any} r @param {any} rep */
function mount(r, rep) {
  const root = doc.createElement('div');
  doc.body.append(root);
  const screen = new AbortController();
  const draw = () => {
    while (root.firstChild) root.firstChild.remove();
    const box = renderTools(r, rep, screen.signal, draw);
    if (box) root.append(box);
  };
  draw();
  return { root, screen };
}

test('Whisper: the files picked are transcribed with the format and language chosen, one line each', async (t) => {
  const evil = '/audio/<img src=x onerror=alert(1)>.mp3';
  answers.files_pick = () => ['/audio/meeting.mp3', evil];
  answers.recipe_transcribe = (args) => {
    args.onProgress.onmessage({ kind: 'started', op_id: 'op-1' });
    return {
      host: 'gpu',
      transcribed: 1,
      failed: 1,
      files: [
        { file: '/audio/meeting.mp3', transcript: '/audio/meeting.mp3.srt', audio_bytes: 10, transcript_bytes: 5, took_ms: 1, error_code: null, error: null },
        { file: evil, transcript: null, audio_bytes: 3, transcript_bytes: 0, took_ms: 1, error_code: 'asr_not_audio', error: 'the Whisper service answered 500' },
      ],
    };
  };
  const { root, screen } = mount(recipe({}), report([]));
  t.after(() => screen.abort());
  assert.ok(!find(root, (n) => n.id === 'goal-upload'), 'no input folder: no upload');
  assert.ok(!find(root, (n) => n.id === 'goal-download'), 'no result folder: no download');
  const format = find(root, (n) => n.id === 'goal-asr-format');
  const lang = find(root, (n) => n.id === 'goal-asr-language');
  assert.ok(format && lang, 'format and language');
  format.value = 'srt';
  lang.value = 'zh';
  find(root, (n) => n.id === 'goal-transcribe')?.click();
  for (let i = 0; i < 5; i++) await settle();
  const call = calls.find((c) => c.cmd === 'recipe_transcribe');
  assert.ok(call, 'recipe_transcribe was invoked');
  assert.equal(call.args.label, 'gpu');
  assert.deepEqual(call.args.files, ['/audio/meeting.mp3', evil]);
  assert.deepEqual(call.args.opts, { format: 'srt', language: 'zh', out_dir: null });
  assert.equal(calls.find((c) => c.cmd === 'files_pick')?.args.pick, 'files');
  const result = find(root, (n) => n.id === 'goal-tool-result');
  assert.ok(result, 'the outcome is listed');
  const lines = findAll(result, (n) => n.tagName === 'LI');
  assert.equal(lines.length, 2);
  assert.equal(lines[0].textContent, '/audio/meeting.mp3 → /audio/meeting.mp3.srt');
  assert.equal(lines[1].getAttribute('class'), 'bad-text');
  assert.ok(lines[1].textContent.startsWith(`${evil}: Whisper could not read this file as audio`), lines[1].textContent);
  assert.ok(!findAll(root, (n) => n.tagName === 'IMG').length, 'a path is text, never markup');
});

test('LoRA: the dataset folder goes to the recipe input folder; the results come back to a chosen folder', async (t) => {
  calls.length = 0;
  answers.files_pick = (args) => (args.pick === 'folder' ? ['/home/me/dataset'] : ['/home/me/out']);
  const summary = (local, remote) => ({ local_path: local, remote_path: remote, files_done: 12, verified: true });
  answers.files_put = (args) => ({ transfers: [summary('/home/me/dataset', `${args.remoteDir}/dataset`)], wire_bytes: 1, elapsed_ms: 1 });
  answers.files_get = (args) => ({ transfers: [summary(`${args.localDir}/output`, '/workspace/output')], wire_bytes: 1, elapsed_ms: 1 });
  const r = recipe({
    name: 'lora-training',
    inputs: { folder: '/workspace/dataset', what: words('your training images') },
    results: ['/workspace/output'],
  });
  const { root, screen } = mount(r, report(['/workspace/output']));
  t.after(() => screen.abort());
  assert.ok(!find(root, (n) => n.id === 'goal-transcribe'), 'only Whisper transcribes');
  find(root, (n) => n.id === 'goal-upload')?.click();
  for (let i = 0; i < 5; i++) await settle();
  const put = calls.find((c) => c.cmd === 'files_put');
  assert.ok(put, 'files_put was invoked');
  assert.deepEqual([put.args.label, put.args.locals, put.args.remoteDir], ['gpu', ['/home/me/dataset'], '/workspace/dataset']);
  assert.equal(put.args.opts.overwrite, false);
  assert.match(find(root, (n) => n.id === 'goal-tool-result')?.textContent ?? '', /12 files, verified/);
  find(root, (n) => n.id === 'goal-download')?.click();
  for (let i = 0; i < 5; i++) await settle();
  const get = calls.find((c) => c.cmd === 'files_get');
  assert.ok(get, 'files_get was invoked');
  assert.deepEqual([get.args.remotes, get.args.localDir], [['/workspace/output'], '/home/me/out']);
  assert.equal(calls.find((c) => c.cmd === 'files_pick' && c.args.pick === 'download_dir')?.args.pick, 'download_dir');
});

test('a saved environment is offered and replayed on the host, its failure with its last lines', async (t) => {
  calls.length = 0;
  answers.env_recipes = () => [{ name: 'old-box-1.sh', path: '/d/old-box-1.sh', host: 'old-box', saved_ms: 1, packages: 3 }];
  answers.env_replay = (args) => ({
    host: args.label,
    recipe: args.name,
    python: 'python3',
    exit_status: 1,
    ok: false,
    tail: ['Collecting numpy==2.1.3', 'ERROR: No matching distribution found for numpy==2.1.3'],
  });
  const { root, screen } = mount(recipe({ name: 'comfyui' }), report([]));
  t.after(() => screen.abort());
  for (let i = 0; i < 3; i++) await settle();
  const row = find(root, (n) => n.id === 'goal-env');
  assert.ok(row && !row.hidden, 'the saved recipe is offered');
  const option = find(root, (n) => n.tagName === 'OPTION' && n.getAttribute('value') === 'old-box-1.sh');
  assert.equal(option?.textContent, 'old-box — 3 packages (old-box-1.sh)');
  const pick = find(root, (n) => n.id === 'goal-env-pick');
  pick.value = 'old-box-1.sh';
  find(root, (n) => n.id === 'goal-replay')?.click();
  for (let i = 0; i < 5; i++) await settle();
  const call = calls.find((c) => c.cmd === 'env_replay');
  assert.deepEqual([call?.args.label, call?.args.name], ['gpu', 'old-box-1.sh']);
  const lines = findAll(find(root, (n) => n.id === 'goal-tool-result'), (n) => n.tagName === 'LI');
  assert.equal(lines[0].textContent, 'old-box-1.sh failed (exit 1); its last lines:');
  assert.equal(lines[2].textContent, 'ERROR: No matching distribution found for numpy==2.1.3');
  assert.ok(lines.every((l) => l.getAttribute('class') === 'bad-text'));
});
