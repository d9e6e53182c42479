/** Modbus TCP connector: public entry point. */
export { createModbusConnector, type ModbusConnector, type ModbusConnectorOptions } from './connector.js';
export { decode, encode, quantise, registerCount, type CodecSpec, type Decoded, type ModbusCodecType } from './codec.js';
export type { Backoff } from './lane.js';
