// InlineStream / InlineEvent: recording an event stamps the time; nothing is ever pending.
#include "scaletrain/backend/cpu/inline_stream.hpp"

#include "scaletrain/core/error.hpp"
#include "scaletrain/core/timer.hpp"

namespace scaletrain::cpu {

void InlineEvent::mark() { time_ = now_seconds(); }

void InlineStream::record(Event& e) {
  auto* ie = dynamic_cast<InlineEvent*>(&e);
  ST_CHECK(ie != nullptr, "stream '", name(), "' cannot record event '", e.label(), "' of another backend");
  ie->mark();
}

}  // namespace scaletrain::cpu
