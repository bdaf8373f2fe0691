// Which desktop OS the app runs on, for examples that must look like the user's own paths
// (`C:\Users\…`, `/Users/…`, `/home/…`). Only examples depend on it; behaviour never does.

/** @returns {'windows' | 'macos' | 'linux'} */
export function platform() {
  const ua = navigator.userAgent;
  if (/Windows/i.test(ua)) return 'windows';
  if (/Mac OS X|Macintosh/i.test(ua)) return 'macos';
  return 'linux';
}
