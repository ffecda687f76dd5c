import ThreadDeskKit
import Foundation
print("x")
