// What `tunebench tune` stores: one row per recommendation (schema version 8).
#include "store/internal.h"

namespace tunebench::storage {

using internal::guarded;

void Database::store_tuning(const Tuning& tuning) {
  guarded(path_, "cannot store the recommendation " + tuning.uuid, [&] {
    SQLite::Statement insert(
        *db_, "INSERT INTO tunings (uuid, created_at, model, recommendation) VALUES (?, ?, ?, ?)");
    insert.bind(1, tuning.uuid);
    insert.bind(2, tuning.created_at);
    insert.bind(3, tuning.model);
    insert.bind(4, internal::dump(tuning.recommendation));
    insert.exec();
  });
}

std::vector<Database::Tuning> Database::tunings() const {
  return guarded(path_, "cannot read the recommendations", [&] {
    std::vector<Tuning> out;
    SQLite::Statement q(*db_,
                        "SELECT uuid, created_at, model, recommendation FROM tunings ORDER BY "
                        "created_at, rowid");
    while (q.executeStep()) {
      Tuning t;
      t.uuid = q.getColumn(0).getString();
      t.created_at = q.getColumn(1).getString();
      t.model = q.getColumn(2).getString();
      t.recommendation = internal::parse_column(q.getColumn(3), "recommendation " + t.uuid);
      out.push_back(std::move(t));
    }
    return out;
  });
}

}  // namespace tunebench::storage
