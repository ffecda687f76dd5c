import Logging
import OTel
import ServiceLifecycle
import ThreadDeskSettings
import Tracing

/// Tracing (`TRACING`, off by default): OpenTelemetry spans exported over OTLP/HTTP to a collector
/// (Jaeger, Tempo, Honeycomb, the OpenTelemetry Collector).
public struct TracingSettings: Sendable, Equatable {
    public enum WireFormat: String, Sendable, Equatable {
        case protobuf = "http/protobuf"
        case json = "http/json"
    }

    /// `TRACING=otlp`.
    public var enabled = false
    /// `TRACING_ENDPOINT`: where spans go (OTLP/HTTP's traces path included).
    public var endpoint = "http://127.0.0.1:4318/v1/traces"
    /// `TRACING_PROTOCOL`: `http/protobuf` (the default) or `http/json`.
    public var format = WireFormat.protobuf
    /// `TRACING_SAMPLE_RATIO` (0 to 1): the share of new traces kept; a trace begun elsewhere (a
    /// request with a sampled `traceparent`) follows its begetter's choice.
    public var sampleRatio = 1.0
    /// How long finished spans wait to be sent in a batch (tests make it short). OpenTelemetry's
    /// 5 s with its 2,048-span queue drops spans past ~100 a second (a busy replica's polls are
    /// thousands): 1 s, a queue of 16,384 and batches of 4,096 carry ~4,000 a second.
    public var exportDelay: Duration = .seconds(1)

    public init() {}

    /// Reads the `TRACING_*` variables; each problem named in `problems`.
    public init(environment: [String: String], problems: inout [String]) {
        switch environment["TRACING"]?.lowercased() {
        case nil, "", "off", "none": enabled = false
        case "otlp": enabled = true
        default: problems.append("TRACING (off or otlp)")
        }
        if let endpoint = environment["TRACING_ENDPOINT"], !endpoint.isEmpty {
            if endpoint.hasPrefix("http://") || endpoint.hasPrefix("https://") { self.endpoint = endpoint } else { problems.append("TRACING_ENDPOINT (an http(s) URL)") }
        }
        if let format = environment["TRACING_PROTOCOL"], !format.isEmpty {
            if let known = WireFormat(rawValue: format) { self.format = known } else { problems.append("TRACING_PROTOCOL (http/protobuf or http/json)") }
        }
        if let ratio = environment["TRACING_SAMPLE_RATIO"], !ratio.isEmpty {
            if let value = Double(ratio), (0...1).contains(value) { sampleRatio = value } else { problems.append("TRACING_SAMPLE_RATIO (0 to 1)") }
        }
    }

    /// The process's `Traces`, and the service that exports them (run it beside the others: it
    /// sends what is left at shutdown). Off: `Traces.off` and no service.
    public func makeTraces(serviceName: String, logger: Logger) throws -> (traces: Traces, exporter: (any Service)?) {
        guard enabled else { return (.off, nil) }
        var configuration = OTel.Configuration.default
        configuration.serviceName = serviceName
        configuration.metrics.enabled = false
        configuration.logs.enabled = false
        configuration.traces.enabled = true
        configuration.traces.exporter = .otlp
        configuration.traces.otlpExporter.endpoint = endpoint
        configuration.traces.otlpExporter.protocol = format == .json ? .httpJSON : .httpProtobuf
        // A collector that does not answer holds nothing up for long: an export, and the last one
        // at shutdown, give up after 3 s (spans are lost then, never the server's work).
        configuration.traces.otlpExporter.timeout = .seconds(3)
        configuration.traces.batchSpanProcessor.exportTimeout = .seconds(3)
        configuration.traces.batchSpanProcessor.scheduleDelay = exportDelay
        configuration.traces.batchSpanProcessor.maxQueueSize = 16_384
        configuration.traces.batchSpanProcessor.maxExportBatchSize = 4_096
        configuration.traces.sampler = .parentBasedTraceIDRatio(ratio: sampleRatio) ?? .parentBasedAlwaysOn
        configuration.propagators = [.traceContext]
        configuration.diagnosticLogger = .custom(logger)
        // Errors only: OpenTelemetry logs each OTEL_* variable it reads with its value (a
        // collector's key in OTEL_EXPORTER_OTLP_HEADERS), and a warning with every malformed
        // traceparent a client sends.
        configuration.diagnosticLogLevel = .error
        let backend = try OTel.makeTracingBackend(configuration: configuration)
        return (Traces(tracer: backend.factory), backend.service)
    }
}
