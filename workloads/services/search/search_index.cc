// Builds the web-search index: corpus.tsv (doc_id TAB source TAB text, text with "\n"
// escaped) -> a Xapian database whose document ids are doc_id + 1.
#include <xapian.h>

#include <fstream>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: pimcloud-search-index CORPUS.tsv DATABASE_DIR\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) {
    std::cerr << "pimcloud-search-index: cannot read " << argv[1]
              << " (build it with: pimcloud workload data)\n";
    return 1;
  }
  try {
    Xapian::WritableDatabase db(argv[2], Xapian::DB_CREATE_OR_OVERWRITE);
    Xapian::TermGenerator indexer;
    indexer.set_stemmer(Xapian::Stem("english"));
    indexer.set_stemming_strategy(Xapian::TermGenerator::STEM_SOME);
    std::string line;
    unsigned long count = 0;
    while (std::getline(in, line)) {
      const auto t1 = line.find('\t'), t2 = line.find('\t', t1 + 1);
      if (t1 == std::string::npos || t2 == std::string::npos) continue;
      const unsigned id = static_cast<unsigned>(std::stoul(line.substr(0, t1)));
      std::string text;
      for (std::size_t p = t2 + 1; p < line.size(); ++p) {  // unescape "\n"
        if (line[p] == '\\' && p + 1 < line.size() && line[p + 1] == 'n') {
          text += '\n';
          ++p;
        } else {
          text += line[p];
        }
      }
      Xapian::Document doc;
      doc.set_data(text);
      indexer.set_document(doc);
      indexer.index_text(text);
      db.replace_document(id + 1, doc);
      ++count;
    }
    db.commit();
    std::cout << "indexed " << count << " documents into " << argv[2] << "\n";
  } catch (const Xapian::Error& e) {
    std::cerr << "pimcloud-search-index: " << e.get_description() << "\n";
    return 1;
  }
  return 0;
}
