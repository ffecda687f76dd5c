import Instrumentation
import ServiceContextModule
@_exported import Tracing

/// The spans of one process: OpenTelemetry's when tracing is on (`TRACING=otlp`), none at all when
/// it is off (the default), where a span is the operation run as it is, with no allocation, no
/// task-local and no clock read.
///
/// A span's parent is the task's current span (`ServiceContext.current`), or a context carried from
/// elsewhere: another process's W3C `traceparent` (``context(traceparent:)``), one kept with a
/// message in the store or a queue (``traceparent()``).
public struct Traces: Sendable {
    /// One reference (8 bytes where it is kept, in every open stream among others).
    private final class Backend: Sendable {
        let tracer: any Tracer
        init(_ tracer: any Tracer) { self.tracer = tracer }
    }

    private let backend: Backend?
    var tracer: (any Tracer)? { backend?.tracer }

    /// No tracing: every span is free.
    public static let off = Traces(tracer: nil)

    public init(tracer: (any Tracer)?) {
        backend = tracer.map(Backend.init)
    }

    public var isOn: Bool { backend != nil }

    /// Runs `operation` in a span named `name`, a child of `parent` (by default the task's current
    /// span); errors thrown are recorded on it. With tracing off, just runs `operation`.
    public func span<T>(
        _ name: String, kind: SpanKind = .internal, parent: TraceContext? = nil, attributes: SpanAttributes = [:],
        isolation: isolated (any Actor)? = #isolation, _ operation: (TraceSpan) async throws -> T
    ) async rethrows -> T {
        guard let tracer else { return try await operation(TraceSpan(span: nil)) }
        let span = tracer.startAnySpan(name, context: parent?.context ?? .current ?? .topLevel, ofKind: kind)
        if !attributes.isEmpty { span.attributes.merge(attributes) }
        defer { span.end() }
        do {
            return try await ServiceContext.$current.withValue(span.context, operation: { try await operation(TraceSpan(span: span)) }, isolation: isolation)
        } catch {
            span.recordError(error)
            span.setStatus(SpanStatus(code: .error))
            throw error
        }
    }

    /// The W3C `traceparent` of the task's current span (or of `context`): what carries it to
    /// another process, or keeps it in the store until a later step continues the trace. Nil when
    /// tracing is off or no span is current.
    public func traceparent(of context: TraceContext? = nil) -> String? {
        guard let tracer, let context = context?.context ?? ServiceContext.current else { return nil }
        var carrier: [String: String] = [:]
        tracer.inject(context, into: &carrier, using: DictionaryInjector())
        return carrier[Self.header]
    }

    /// The context a `traceparent` names (from another process's request, or the store), for
    /// the spans that continue its trace. Nil when tracing is off or the value is not one.
    public func context(traceparent: String?) -> TraceContext? {
        guard let tracer, let traceparent, Self.isWellFormed(traceparent) else { return nil }
        var context = ServiceContext.topLevel
        tracer.extract([Self.header: traceparent], into: &context, using: DictionaryExtractor())
        // A value that names no span leaves the context as it was: no parent then.
        let found = TraceContext(context: context)
        return self.traceparent(of: found) == nil ? nil : found
    }

    /// A W3C `traceparent` of version 00: `00-<32 hex>-<16 hex>-<2 hex>`, ids not all zero. Checked
    /// here, before the tracer sees it: anything else (any client may send anything) is no parent,
    /// silently.
    static func isWellFormed(_ value: String) -> Bool {
        let bytes = Array(value.utf8)
        guard bytes.count == 55, bytes[0] == 0x30, bytes[1] == 0x30, bytes[2] == 0x2D, bytes[35] == 0x2D, bytes[52] == 0x2D else { return false }
        func hex(_ range: Range<Int>) -> Bool { bytes[range].allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) } }
        func zero(_ range: Range<Int>) -> Bool { bytes[range].allSatisfy { $0 == 0x30 } }
        return hex(3..<35) && hex(36..<52) && hex(53..<55) && !zero(3..<35) && !zero(36..<52)
    }

    /// The task's current span, to continue its trace in another task later (a queue's job, a
    /// wake-up); nil when tracing is off or no span is current.
    public func current() -> TraceContext? {
        guard tracer != nil, let context = ServiceContext.current else { return nil }
        return TraceContext(context: context)
    }

    /// `job`, run later in another task, as part of the trace current now.
    public func carrying(_ job: @escaping @Sendable () async -> Void) -> @Sendable () async -> Void {
        guard let context = current() else { return job }
        return { await ServiceContext.$current.withValue(context.context) { await job() } }
    }

    /// The W3C header, lower case as HTTP/2 and NIO's `HTTPFields` keep it.
    public static let header = "traceparent"
}

/// Where a trace stands (a span), carried to the work that continues it.
public struct TraceContext: Sendable {
    let context: ServiceContext
}

/// The span an operation runs in, to say more about it as it goes (nothing when tracing is off).
public struct TraceSpan: Sendable {
    let span: (any Span)?

    public func set(_ attributes: SpanAttributes) {
        span?.attributes.merge(attributes)
    }

    /// Names the span (a request's route, once it is known).
    public func rename(_ name: String) {
        span?.operationName = name
    }

    /// Marks the span failed (an answer that is an error, without an error thrown).
    public func failed(_ message: String? = nil) {
        span?.setStatus(SpanStatus(code: .error, message: message))
    }

    /// Links another trace's span (a message's send, met again when Discord echoes it).
    public func link(_ context: TraceContext?) {
        guard let span, let context else { return }
        span.addLink(SpanLink(context: context.context, attributes: [:]))
    }
}

struct DictionaryInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) {
        carrier[key.lowercased()] = value
    }
}

struct DictionaryExtractor: Extractor {
    func extract(key: String, from carrier: [String: String]) -> String? {
        carrier[key.lowercased()]
    }
}
