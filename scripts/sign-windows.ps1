# Called by the Tauri bundler for every Windows binary and installer (bundle.windows.signCommand in
# src-tauri/tauri.conf.json) with the file's path. Signs only when the environment names a
# certificate; otherwise it says so and succeeds, so unsigned builds keep working.
#   GPURENT_WINDOWS_CERT_THUMBPRINT  SHA-1 thumbprint of a code-signing certificate in the user's
#                                    certificate store (Cert:\CurrentUser\My)
#   GPURENT_WINDOWS_TIMESTAMP_URL    RFC 3161 timestamp server (default http://timestamp.digicert.com)
#   GPURENT_SIGNTOOL                 signtool.exe to use (default: signtool on PATH)
param([Parameter(Mandatory = $true)][string]$File)
$ErrorActionPreference = 'Stop'
$thumb = $env:GPURENT_WINDOWS_CERT_THUMBPRINT
if ([string]::IsNullOrWhiteSpace($thumb)) {
  Write-Host "gpurent: GPURENT_WINDOWS_CERT_THUMBPRINT is not set; leaving $File unsigned"
  exit 0
}
$ts = if ($env:GPURENT_WINDOWS_TIMESTAMP_URL) { $env:GPURENT_WINDOWS_TIMESTAMP_URL } else { 'http://timestamp.digicert.com' }
$signtool = if ($env:GPURENT_SIGNTOOL) { $env:GPURENT_SIGNTOOL } else { 'signtool' }
& $signtool sign /sha1 $thumb /fd sha256 /tr $ts /td sha256 $File
exit $LASTEXITCODE
