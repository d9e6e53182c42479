/**
 * Wire format of the inspection station's camera frames: one OPC UA
 * ByteString per camera (vision.Frame1 … vision.Frame6), each carrying its
 * own header, so a client can prove that six frames belong to one trigger
 * however it obtained them (one Read, or six monitored items whose
 * notifications arrive from different sampling instants):
 *
 *   byte 0–3  trigger id, UInt32 little-endian (the tablet; = vision.TriggerId)
 *   byte 4    camera index 0–5 (0/1 upper/lower face, 2–5 side band 0°/90°/180°/270°)
 *   byte 5    width in pixels (format 1; 0 in format 2)
 *   byte 6    height in pixels (format 1; 0 in format 2)
 *   byte 7    format: 1 = 8-bit grey, row-major, size in bytes 5–6 (frames up to 255×255);
 *             2 = 8-bit grey, row-major, size in bytes 8–11 (a line camera's 640×480 and up)
 *   format 2: byte 8–9 width, 10–11 height, UInt16 little-endian
 *   then      width × height pixels (from byte 8 in format 1, from byte 12 in format 2)
 *
 * The encoder writes format 1 when the frame fits it, format 2 otherwise.
 *
 * Pure code shared by the simulator (encodes) and linekeeper (decodes).
 */
import { LkError } from '../../src/errors.js';

export const FRAME_HEADER_BYTES = 8;
/** Header of format 2 (16-bit width and height). */
export const FRAME_HEADER_BYTES_WIDE = 12;
/** 8-bit grey, row-major, one byte per pixel. */
export const FRAME_FORMAT_GREY8 = 1;
/** The same with 16-bit width and height. */
export const FRAME_FORMAT_GREY8_WIDE = 2;
/** Cameras of one trigger. */
export const FRAME_CAMERAS = 6;

export interface Frame {
  readonly triggerId: number;
  readonly camera: number;
  readonly width: number;
  readonly height: number;
  /** width × height grey values, row-major. */
  readonly pixels: Uint8Array;
}

/** Six frames of one trigger, in camera order: the shape src/twin/vision's classifier takes. */
export interface WireFrameSet {
  readonly triggerId: number;
  readonly frames: Uint8Array[];
}

const u32 = (v: number): boolean => Number.isInteger(v) && v >= 0 && v < 2 ** 32;
const u8 = (v: number): boolean => Number.isInteger(v) && v >= 0 && v < 256;
const u16 = (v: number): boolean => Number.isInteger(v) && v >= 0 && v < 65536;

/**
 * Encode one frame (format 1 when width and height fit a byte, else format 2).
 * Throws LK_VALIDATION when the trigger id is not a UInt32, the camera does
 * not fit a byte, width or height is 0 or does not fit 16 bits, or the pixel
 * count is not width × height.
 */
export function encodeFrame(f: Frame): Uint8Array {
  if (!u32(f.triggerId)) throw new LkError('LK_VALIDATION', `trigger id ${f.triggerId} is not a UInt32`);
  if (!u8(f.camera) || !u16(f.width) || !u16(f.height) || f.width === 0 || f.height === 0) {
    throw new LkError('LK_VALIDATION', `camera ${f.camera}, ${f.width}×${f.height}: the camera must fit one byte, the size 16 bits (and be non-zero)`);
  }
  if (f.pixels.length !== f.width * f.height) throw new LkError('LK_VALIDATION', `${f.pixels.length} pixels for a ${f.width}×${f.height} frame`);
  const wide = !u8(f.width) || !u8(f.height);
  const header = wide ? FRAME_HEADER_BYTES_WIDE : FRAME_HEADER_BYTES;
  const out = new Uint8Array(header + f.pixels.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, f.triggerId, true);
  out[4] = f.camera;
  if (wide) {
    out[7] = FRAME_FORMAT_GREY8_WIDE;
    view.setUint16(8, f.width, true);
    view.setUint16(10, f.height, true);
  } else {
    out[5] = f.width;
    out[6] = f.height;
    out[7] = FRAME_FORMAT_GREY8;
  }
  out.set(f.pixels, header);
  return out;
}

/**
 * Decode one frame; `pixels` is a view into `bytes` (no copy). Throws
 * LK_VALUE_INVALID for a truncated frame, an unknown format or a length
 * that disagrees with the header.
 */
export function decodeFrame(bytes: Uint8Array): Frame {
  if (bytes.length < FRAME_HEADER_BYTES) throw new LkError('LK_VALUE_INVALID', `frame of ${bytes.length} bytes has no header`, { reason: 'truncated' });
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const format = bytes[7]!;
  if (format !== FRAME_FORMAT_GREY8 && format !== FRAME_FORMAT_GREY8_WIDE) throw new LkError('LK_VALUE_INVALID', `frame format ${format} is not 1 or 2 (8-bit grey)`, { reason: 'format' });
  const wide = format === FRAME_FORMAT_GREY8_WIDE;
  if (wide && bytes.length < FRAME_HEADER_BYTES_WIDE) throw new LkError('LK_VALUE_INVALID', `frame of ${bytes.length} bytes has no format-2 header`, { reason: 'truncated' });
  const header = wide ? FRAME_HEADER_BYTES_WIDE : FRAME_HEADER_BYTES;
  const width = wide ? view.getUint16(8, true) : bytes[5]!;
  const height = wide ? view.getUint16(10, true) : bytes[6]!;
  if (bytes.length !== header + width * height) {
    throw new LkError('LK_VALUE_INVALID', `frame of ${bytes.length} bytes does not hold ${width}×${height} pixels`, { reason: 'length' });
  }
  return { triggerId: view.getUint32(0, true), camera: bytes[4]!, width, height, pixels: bytes.subarray(header) };
}

/**
 * Put six frames (Frame1…Frame6 values, in order) together as one frame set.
 * Throws LK_VALUE_INVALID (detail.reason) unless there are six frames, each
 * decodes, frame i is camera i, all have the same size and the same trigger
 * id — and, when `triggerId` is given (the vision.TriggerId read with them),
 * that one. A mixed set is refused, never classified.
 */
export function assembleFrameSet(frames: readonly (Uint8Array | null | undefined)[], triggerId?: number): WireFrameSet {
  if (frames.length !== FRAME_CAMERAS) throw new LkError('LK_VALUE_INVALID', `a frame set has ${FRAME_CAMERAS} frames, got ${frames.length}`, { reason: 'count' });
  const decoded = frames.map((b, i) => {
    if (!b) throw new LkError('LK_VALUE_INVALID', `frame ${i + 1} is missing`, { reason: 'missing', camera: i });
    return decodeFrame(b);
  });
  const first = decoded[0]!;
  decoded.forEach((f, i) => {
    if (f.camera !== i) throw new LkError('LK_VALUE_INVALID', `frame ${i + 1} is from camera ${f.camera}`, { reason: 'camera', camera: i });
    if (f.width !== first.width || f.height !== first.height) throw new LkError('LK_VALUE_INVALID', `frame ${i + 1} is ${f.width}×${f.height}, frame 1 ${first.width}×${first.height}`, { reason: 'size', camera: i });
    if (f.triggerId !== first.triggerId) {
      throw new LkError('LK_VALUE_INVALID', `frame ${i + 1} is of trigger ${f.triggerId}, frame 1 of ${first.triggerId}`, { reason: 'trigger', camera: i });
    }
  });
  if (triggerId !== undefined && triggerId !== first.triggerId) {
    throw new LkError('LK_VALUE_INVALID', `frames are of trigger ${first.triggerId}, TriggerId says ${triggerId}`, { reason: 'trigger' });
  }
  return { triggerId: first.triggerId, frames: decoded.map((f) => f.pixels) };
}
