// Content parts on the chat page: files the user attaches (the attach button, or an image
// pasted into the composer) become AG-UI 1.0 parts ({type, source: {type: "data", value,
// mimeType}, metadata: {filename}}); parts the server sends back (the user's own messages
// from a stored thread, tool results, a reply's parts) are shown as images where they are
// inline images, and named as text otherwise. Nothing from the server becomes markup, and
// no URL the server names is loaded (a URL part is shown as its address).

const IMAGE_TYPE = /^image\/[a-z0-9.+-]{1,60}$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export function kindOf(mimeType) {
  const family = String(mimeType || "").split("/")[0];
  return ["image", "audio", "video"].includes(family) ? family : "document";
}

// A File as an AG-UI part.
export function fileToPart(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onerror = () => reject(reader.error ?? new Error("the file could not be read"));
    reader.onload = () => {
      const url = String(reader.result);
      const mimeType = file.type || "application/octet-stream";
      const part = { type: kindOf(mimeType), source: { type: "data", value: url.slice(url.indexOf(",") + 1), mimeType } };
      if (file.name) part.metadata = { filename: file.name };
      resolve(part);
    };
    reader.readAsDataURL(file);
  });
}

export function partName(part) {
  const name = part?.metadata?.filename;
  return typeof name === "string" && name ? name : part?.type ?? "part";
}

function asImage(part) {
  const source = part?.source;
  if (part?.type !== "image" || source?.type !== "data") return null;
  if (!IMAGE_TYPE.test(String(source.mimeType)) || typeof source.value !== "string" || !BASE64.test(source.value)) return null;
  const img = document.createElement("img");
  img.className = "part-image";
  img.alt = partName(part);
  img.src = `data:${source.mimeType};base64,${source.value}`;
  return img;
}

// One part as an element: an inline image, else a chip naming it.
export function partElement(part) {
  const img = asImage(part);
  if (img) return img;
  const chip = document.createElement("span");
  chip.className = "part-chip";
  const source = part?.source;
  const where = source?.type === "url" ? `: ${String(source.value)}` : source?.mimeType ? ` (${String(source.mimeType)})` : "";
  chip.textContent = `${partName(part)}${where}`;
  return chip;
}

// The non-text parts of a content (string or parts) in a box, or null when there are none.
export function partsBox(content) {
  if (!Array.isArray(content)) return null;
  const media = content.filter((p) => p && typeof p === "object" && p.type !== "text");
  if (!media.length) return null;
  const box = document.createElement("div");
  box.className = "parts";
  for (const part of media.slice(0, 32)) box.append(partElement(part));
  return box;
}

// The text of a content: a string, or its text parts joined (as @ag-ui/core's contentToText).
export function textOf(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return content === undefined || content === null ? "" : JSON.stringify(content);
  return content.filter((p) => p?.type === "text" && typeof p.text === "string").map((p) => p.text).join("");
}
