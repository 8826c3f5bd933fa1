/**
 * File extensions for media types and back, for media files saved from tool results.
 *
 * @since 0.1.0
 */

const byMime: Readonly<Record<string, string>> = {
  "image/png": "png",
  "image/jpeg": "jpg",
  "image/gif": "gif",
  "image/webp": "webp",
  "image/svg+xml": "svg",
  "image/bmp": "bmp",
  "image/avif": "avif",
  "audio/wav": "wav",
  "audio/x-wav": "wav",
  "audio/wave": "wav",
  "audio/mpeg": "mp3",
  "audio/mp3": "mp3",
  "audio/ogg": "ogg",
  "audio/webm": "weba",
  "audio/flac": "flac",
  "audio/aac": "aac",
  "video/mp4": "mp4",
  "video/webm": "webm",
  "application/pdf": "pdf",
  "application/json": "json",
  "application/zip": "zip",
  "application/gzip": "gz",
  "text/plain": "txt",
  "text/markdown": "md",
  "text/html": "html",
  "text/csv": "csv"
}

const byExt: Readonly<Record<string, string>> = Object.fromEntries(
  Object.entries(byMime).reverse().map(([mime, ext]) => [ext, mime])
)

/** The file extension for a MIME type (parameters ignored); `bin` when unknown. */
export const extensionFor = (mimeType: string): string => byMime[mimeType.split(";")[0]!.trim().toLowerCase()] ?? "bin"

/** The `Content-Type` for a file extension; `application/octet-stream` when unknown. */
export const contentTypeFor = (extension: string): string =>
  byExt[extension.toLowerCase()] ?? "application/octet-stream"

/** A human-readable size: `412 B`, `1.2 KB`, `3.4 MB`. */
export const formatSize = (bytes: number): string => {
  if (bytes < 1024) return `${bytes} B`
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1).replace(/\.0$/, "")} KB`
  return `${(bytes / (1024 * 1024)).toFixed(1).replace(/\.0$/, "")} MB`
}
