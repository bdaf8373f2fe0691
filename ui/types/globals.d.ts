// The slice of Tauri's injected global API that ui/js/tauri.js uses (withGlobalTauri = true).
// Only that module may touch window.__TAURI__.
interface TauriChannel<T> {
  onmessage: (message: T) => void;
  readonly id: number;
}

interface Window {
  __TAURI__?: {
    core: {
      invoke<T>(cmd: string, args?: Record<string, unknown>): Promise<T>;
      Channel: new <T>() => TauriChannel<T>;
    };
    event: {
      listen<T>(event: string, handler: (e: { payload: T }) => void): Promise<() => void>;
    };
  };
}
